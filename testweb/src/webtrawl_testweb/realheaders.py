"""The headers a real site's answers carry, for the realistic web's hosts that send them (``headers_share``)."""

from __future__ import annotations

# What a news site's answers carry besides Content-Type and Content-Length (~1.3 KB; no URL a crawler could follow).
SERVER_HEADERS: tuple[tuple[str, str], ...] = (
    ("Server", "nginx"),
    ("Cache-Control", "private, no-cache, no-store, max-age=0, must-revalidate"),
    ("Vary", "Accept-Encoding, Cookie, User-Agent"),
    ("X-Frame-Options", "SAMEORIGIN"),
    ("X-Content-Type-Options", "nosniff"),
    ("X-XSS-Protection", "1; mode=block"),
    ("Strict-Transport-Security", "max-age=31536000; includeSubDomains; preload"),
    ("Referrer-Policy", "strict-origin-when-cross-origin"),
    ("Permissions-Policy", "geolocation=(), microphone=(), camera=(), payment=(), usb=(), interest-cohort=()"),
    (
        "Content-Security-Policy",
        "default-src 'self'; script-src 'self' 'unsafe-inline' 'unsafe-eval' *.cdn.test *.analytics.test; "
        "style-src 'self' 'unsafe-inline' *.cdn.test; img-src * data: blob:; font-src 'self' data: *.cdn.test; "
        "connect-src 'self' *.analytics.test; frame-ancestors 'self'; upgrade-insecure-requests",
    ),
    ("Set-Cookie", "session=6f1c0a9e2b7d4e8fa3c5b1d09e7f6a24; Path=/; Secure; HttpOnly; SameSite=Lax"),
    ("Set-Cookie", "consent=0; Max-Age=31536000; Path=/; Secure; SameSite=Lax"),
    ("ETag", 'W/"3a9f1-18c2b7e4f10"'),
    ("Last-Modified", "Tue, 24 Nov 2026 18:42:07 GMT"),
    ("Accept-Ranges", "bytes"),
    ("Age", "127"),
    ("Via", "1.1 varnish, 1.1 cache-fra-0123-FRA"),
    ("X-Cache", "HIT, MISS"),
    ("X-Cache-Hits", "3, 0"),
    ("X-Served-By", "cache-fra-0123-FRA, cache-ams-4567-AMS"),
    ("X-Timer", "S1764182527.123456,VS0,VE42"),
    ("X-Request-Id", "b3f1c2d4-5e6f-4a7b-8c9d-0e1f2a3b4c5d"),
    ("Alt-Svc", 'h3=":443"; ma=86400'),
    ("NEL", '{"report_to":"default","max_age":2592000,"include_subdomains":true}'),
)
