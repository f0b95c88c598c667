// webtrawl dashboard: polls api/status once a second and draws it. No framework; uPlot for the plots.
"use strict";
(function () {
  const token = new URLSearchParams(location.search).get("token");
  const statusUrl = "api/status" + (token ? "?token=" + encodeURIComponent(token) : "");
  const $ = (sel) => document.querySelector(sel);
  const int = (n) => (n === null || n === undefined ? "-" : Math.round(n).toLocaleString("en-US"));
  const num = (n, d) => (n === null || n === undefined ? "-" : Number(n).toFixed(d));
  const pct = (f) => (f === null || f === undefined ? "-" : (f * 100).toFixed(1) + "%");
  const UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
  function bytes(n) {
    if (n === null || n === undefined) return "-";
    let v = Number(n), u = 0;
    while (Math.abs(v) >= 1024 && u < UNITS.length - 1) { v /= 1024; u++; }
    if (u === 0) return Math.round(v) + "B";
    return (Math.abs(v) < 10 ? v.toFixed(1) : v.toFixed(0)) + UNITS[u];
  }
  function duration(s) {
    if (s === null || s === undefined) return "-";
    let t = Math.max(0, Math.floor(s));
    const h = Math.floor(t / 3600), m = Math.floor((t % 3600) / 60), sec = t % 60;
    const two = (x) => String(x).padStart(2, "0");
    if (h) return h + "h" + two(m) + "m" + two(sec) + "s";
    if (m) return m + "m" + two(sec) + "s";
    return sec + "s";
  }
  function set(name, text) {
    const el = document.querySelector('[data-figure="' + name + '"]');
    if (el) el.textContent = text;
  }
  function table(id, head, rows, numeric) {
    const t = document.getElementById(id);
    const cells = (tag, row) => row.map((c, i) => "<" + tag + (numeric[i] ? ' class="n"' : "") + ">" +
      String(c).replace(/[&<>]/g, (ch) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;" })[ch]) + "</" + tag + ">").join("");
    let html = "<tr>" + cells("th", head) + "</tr>";
    if (!rows.length) html += '<tr><td class="empty" colspan="' + head.length + '">none</td></tr>';
    for (const row of rows) html += "<tr>" + cells("td", row) + "</tr>";
    t.innerHTML = html;
  }

  const charts = {};
  function chart(id, series, colors) {
    const el = document.getElementById(id);
    const opts = {
      width: Math.max(300, el.clientWidth), height: 200,
      scales: { x: { time: true } },
      legend: { live: false },
      series: [{}].concat(series.map((label, i) => ({ label: label, stroke: colors[i], width: 1.5 }))),
      axes: [{}, { size: 60 }],
    };
    return new uPlot(opts, [[]].concat(series.map(() => [])), el);
  }
  function plots(h) {
    if (!h || !h.t) return;
    if (!charts.rates) {
      charts.rates = chart("chart-rates", ["pages/s", "errors/s"], ["#2f7d4f", "#b3261e"]);
      charts.frontier = chart("chart-frontier", ["queued", "leased"], ["#3465a4", "#c17d11"]);
      charts.hosts = chart("chart-hosts", ["ready", "waiting"], ["#2f7d4f", "#75507b"]);
    }
    charts.rates.setData([h.t, h.pages_s, h.errors_s]);
    charts.frontier.setData([h.t, h.queued, h.inflight]);
    charts.hosts.setData([h.t, h.ready, h.waiting]);
  }

  function render(d) {
    const c = d.counters || {};
    set("scope", d.scope === "cluster" ? "cluster" : "node " + (d.node || ""));
    set("state", d.state || "");
    set("elapsed", duration(d.elapsed));
    set("updated", new Date(d.at * 1000).toLocaleTimeString("en-GB"));
    const p = d.progress || {};
    set("progress", pct(p.fraction));
    set("progress-basis", p.basis ? "of " + p.basis : "");
    set("eta", p.eta_s == null && p.waiting ? p.waiting : duration(p.eta_s));
    $("#progress-fill").style.width = ((p.fraction || 0) * 100).toFixed(1) + "%";
    set("fetched", int(c.fetched || 0));
    set("stored", int(c.stored || 0));
    set("errors", int((d.errors || []).reduce((a, r) => a + r[1], 0)));
    set("pages-rate", num((d.rates || {}).pages_s, 1));
    set("errors-rate", num((d.rates || {}).errors_s, 1));
    set("success", pct(p.success_rate));
    set("queued", int(d.queued));
    set("inflight", int(d.inflight));
    set("ready", int(d.ready_hosts));
    set("waiting", int(d.waiting_hosts));
    set("written", bytes(p.bytes_written));
    set("downloaded", bytes(p.bytes_downloaded));
    set("redis", bytes(d.redis_used_memory));

    const alerts = (d.alerts && d.alerts.active) || [];
    $("#alerts").hidden = !alerts.length;
    $("#alert-list").innerHTML = "";
    for (const a of alerts) {
      const li = document.createElement("li");
      li.textContent = (a.node ? a.node + ": " : "") + a.name + ": " + a.message;
      $("#alert-list").appendChild(li);
    }

    table("t-errors", ["reason", "URLs"], (d.errors || []).map((r) => [r[0], int(r[1])]), [0, 1]);
    table("t-dropped", ["reason", "URLs"], (d.dropped || []).map((r) => [r[0], int(r[1])]), [0, 1]);
    const hosts = d.hosts || {};
    const hostRow = (h) => [h.host, num(h.gap_ms / 1000, 1) + "s", duration(h.wait_ms / 1000), int(h.failures), int(h.queued)];
    const hostHead = ["host", "gap", "next in", "failures", "queued"];
    table("t-slow", hostHead, (hosts.slowest || []).map(hostRow), [0, 1, 1, 1, 1]);
    table("t-failing", hostHead, (hosts.failing || []).map(hostRow), [0, 1, 1, 1, 1]);
    const procs = Object.entries(d.processes || {}).map(([k, v]) => [k, int(v.count), num(v.cpu, 0) + "%", bytes(v.rss)]);
    table("t-procs", ["kind", "processes", "CPU", "memory"], procs, [0, 1, 1, 1]);
    const nodes = (d.nodes || []).map((n) => [n.id, n.state, int(n.fetched), n.live ? num(n.rate, 1) : "-",
      n.live ? int(n.leases) : "-", n.cpu === undefined ? "-" : num(n.cpu, 0) + "%", n.rss === undefined ? "-" : bytes(n.rss),
      num(n.seen_s_ago, 0) + "s ago", n.host || ""]);
    table("t-nodes", ["id", "state", "fetched", "pages/s", "leases", "CPU", "memory", "seen", "host"], nodes,
      [0, 0, 1, 1, 1, 1, 1, 1, 0]);
    // settings in three pairs of columns: a long list stays short on screen
    const pairs = Object.entries(d.settings || {}).map(([k, v]) => [k, Array.isArray(v) ? v.join(", ") : String(v)]);
    const third = Math.ceil(pairs.length / 3), rows = [];
    for (let i = 0; i < third; i++) {
      rows.push([].concat(pairs[i] || ["", ""], pairs[i + third] || ["", ""], pairs[i + 2 * third] || ["", ""]));
    }
    table("t-settings", ["setting", "value", "setting", "value", "setting", "value"], rows, [0, 0, 0, 0, 0, 0]);
    plots(d.history);
    document.body.dataset.at = String(d.at);
  }

  async function poll() {
    try {
      const r = await fetch(statusUrl, { cache: "no-store" });
      if (!r.ok) throw new Error("HTTP " + r.status);
      const d = await r.json();
      $("#conn").hidden = true;
      if (d.at) render(d);
    } catch (e) {
      $("#conn").hidden = false;
    }
    setTimeout(poll, 1000);
  }
  poll();
})();
