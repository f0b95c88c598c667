"""The built-in sinks beside the crawl's own files: CSV, JSON, Parquet, SQLite, PostgreSQL, MariaDB/MySQL, NATS
JetStream and RabbitMQ (rows keyed by crawl, URL and item index: :mod:`.rows`), and ``trawl export``
(:mod:`.export`). They are named by URL and built through the one registry, :mod:`webtrawl.store.registry`, from
their rows in :mod:`webtrawl.store.schemes`."""
