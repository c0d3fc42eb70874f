// Spica's results pages (spica/results/page.py inlines this file): report.html draws one search,
// compare.html several. Every string from the data is put in as text (textContent, attribute
// values), never parsed as markup: a model name or path holding "<script>" shows as itself.
"use strict";
var Spica = (function () {
  var SVG = "http://www.w3.org/2000/svg";
  var PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
  var COSTS = [["min_cost", "cost_per_hour", "cost (price/h)"], ["cost_per_mtok", "cost_per_mtok", "cost (price/Mtok)"]];  // goal, metric, column
  var NAMES = {
    gpus: "GPUs used", mean_ttft_ms: "mean TTFT (ms)", mean_tpot_ms: "mean TPOT (ms)", mean_itl_ms: "mean ITL (ms)",
    mean_e2e_latency_ms: "mean E2E latency (ms)", provisioned_gpus: "GPUs provisioned (time average)",
    cost_per_hour: "cost (price/h)", cost_per_mtok: "cost (price/Mtok)"
  };

  function el(tag, attrs) {
    var node = document.createElement(tag);
    setAttrs(node, attrs);
    for (var i = 2; i < arguments.length; i++) append(node, arguments[i]);
    return node;
  }
  function svg(tag, attrs) {
    var node = document.createElementNS(SVG, tag);
    setAttrs(node, attrs);
    return node;
  }
  function setAttrs(node, attrs) {
    for (var name in attrs || {}) {
      var value = attrs[name];
      if (value === null || value === undefined || value === false) continue;
      if (name === "text") node.textContent = String(value);
      else if (name.slice(0, 2) === "on") node.addEventListener(name.slice(2), value);
      else node.setAttribute(name, String(value));
    }
  }
  function append(node, child) {
    if (child === null || child === undefined || child === false) return;
    if (Array.isArray(child)) { child.forEach(function (c) { append(node, c); }); return; }
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  function fmt(value) {
    if (value === null || value === undefined) return "–";
    if (typeof value !== "number") return String(value);
    var abs = Math.abs(value);
    if (Number.isInteger(value)) return value.toLocaleString("en-US");
    var digits = abs >= 100 ? 1 : abs >= 10 ? 2 : 3;
    return value.toLocaleString("en-US", { maximumFractionDigits: digits });
  }
  function fieldName(key, units) {
    if (NAMES[key]) return NAMES[key];
    var name = key.replace(/_per_/g, " per ").replace(/_/g, " ").replace(/\bgpu\b/g, "GPU");
    return units && units[key] ? name + " (" + units[key] + ")" : name;
  }
  function href(path) {  // a relative path of the folder, each part escaped
    return path.split("/").map(encodeURIComponent).join("/");
  }
  function fieldValue(point, key) {
    if (key === "gpus") return point.gpus;
    if (point.objectives && key in point.objectives) return point.objectives[key];
    return point.metrics ? point.metrics[key] : undefined;
  }
  function numericFields(points, first) {  // objectives first, then GPUs, then metrics every point has
    var seen = {}, order = first.slice();
    order.push("gpus");
    points.forEach(function (p) { Object.keys(p.metrics || {}).forEach(function (k) { seen[k] = (seen[k] || 0) + 1; }); });
    Object.keys(seen).sort().forEach(function (k) { if (seen[k] === points.length && order.indexOf(k) < 0) order.push(k); });
    return order;
  }

  // --- the plot: an SVG scatter with its axes, series, lines, rings; hover and click call back ---
  function niceTicks(low, high, count) {
    if (low === high) { low -= 1; high += 1; }
    var raw = (high - low) / count, power = Math.pow(10, Math.floor(Math.log10(raw))), step = power;
    [1, 2, 2.5, 5, 10].some(function (m) { step = m * power; return raw <= step; });
    var ticks = [];
    for (var t = Math.ceil(low / step) * step; t <= high + step * 1e-9; t += step) ticks.push(+t.toPrecision(12));
    return ticks;
  }
  function logTicks(low, high) {
    var ticks = [];
    for (var e = Math.floor(Math.log10(low)); e <= Math.ceil(Math.log10(high)); e++) {
      [1, 2, 5].forEach(function (m) { var t = m * Math.pow(10, e); if (t >= low && t <= high) ticks.push(t); });
    }
    return ticks;
  }
  function scale(low, high, from, to, log) {
    if (log) { low = Math.log10(low); high = Math.log10(high); }
    if (low === high) { low -= 1; high += 1; }
    return function (v) { var x = log ? Math.log10(v) : v; return from + (x - low) / (high - low) * (to - from); };
  }

  function drawPlot(host, spec, on) {
    // spec: {x: {key, label}, y: {key, label, log}, series: [{name, color, points, line, faint}], hlines, vlines}
    host.textContent = "";
    var width = Math.max(480, Math.min(host.clientWidth || 900, 1100)), height = 460;
    var m = { left: 72, right: 18, top: 14, bottom: 46 };
    var xs = [], ys = [], ranks = [];
    spec.series.forEach(function (s) { s.points.forEach(function (p) { xs.push(p.x); ys.push(p.y); }); });
    (spec.hlines || []).forEach(function (l) { ys.push(l.value); });
    (spec.vlines || []).forEach(function (l) { xs.push(l.value); });
    var root = svg("svg", { width: width, height: height, viewBox: "0 0 " + width + " " + height, class: "plot", role: "img" });
    host.append(root);
    if (!xs.length) {
      root.append(svg("text", { x: width / 2, y: height / 2, "text-anchor": "middle", class: "empty", text: "no feasible candidate to plot" }));
      return root;
    }
    var logY = spec.y.log && ys.every(function (v) { return v > 0; });
    function pad(lo, hi, log) {
      if (log) return [lo / 1.3, hi * 1.3];
      var span = (hi - lo) || Math.abs(hi) || 1;
      return [lo - span * 0.06, hi + span * 0.06];
    }
    var xr = pad(Math.min.apply(null, xs), Math.max.apply(null, xs), false);
    var yr = pad(Math.min.apply(null, ys), Math.max.apply(null, ys), logY);
    var X = scale(xr[0], xr[1], m.left, width - m.right, false), Y = scale(yr[0], yr[1], height - m.bottom, m.top, logY);
    var grid = svg("g", { class: "grid" });
    root.append(grid);
    niceTicks(xr[0], xr[1], 8).forEach(function (t) {
      grid.append(svg("line", { x1: X(t), x2: X(t), y1: m.top, y2: height - m.bottom }));
      root.append(svg("text", { x: X(t), y: height - m.bottom + 16, "text-anchor": "middle", class: "tick", text: fmt(t) }));
    });
    (logY ? logTicks(yr[0], yr[1]) : niceTicks(yr[0], yr[1], 7)).forEach(function (t) {
      grid.append(svg("line", { x1: m.left, x2: width - m.right, y1: Y(t), y2: Y(t) }));
      root.append(svg("text", { x: m.left - 6, y: Y(t) + 4, "text-anchor": "end", class: "tick", text: fmt(t) }));
    });
    root.append(svg("rect", { x: m.left, y: m.top, width: width - m.left - m.right, height: height - m.top - m.bottom, class: "frame" }));
    root.append(svg("text", { x: (m.left + width - m.right) / 2, y: height - 8, "text-anchor": "middle", class: "axis", text: spec.x.label }));
    root.append(svg("text", { x: 14, y: (m.top + height - m.bottom) / 2, "text-anchor": "middle", class: "axis",
      transform: "rotate(-90 14 " + (m.top + height - m.bottom) / 2 + ")", text: spec.y.label + (logY ? " (log)" : "") }));
    (spec.hlines || []).forEach(function (l) {
      root.append(svg("line", { x1: m.left, x2: width - m.right, y1: Y(l.value), y2: Y(l.value), class: "sla" }));
      root.append(svg("text", { x: width - m.right - 4, y: Y(l.value) - 5, "text-anchor": "end", class: "sla-label", text: l.label }));
    });
    (spec.vlines || []).forEach(function (l) {
      root.append(svg("line", { x1: X(l.value), x2: X(l.value), y1: m.top, y2: height - m.bottom, class: "sla" }));
      root.append(svg("text", { x: X(l.value) + 4, y: m.top + 12, class: "sla-label", text: l.label }));
    });
    spec.series.forEach(function (s) {
      var layer = svg("g", { class: "series", "data-series": s.name });
      root.append(layer);
      if (s.line && s.line.length > 1) {
        layer.append(svg("polyline", { class: "front", stroke: s.color, points: s.line.map(function (p) { return X(p.x) + "," + Y(p.y); }).join(" ") }));
      }
      s.points.forEach(function (p) {
        var cx = X(p.x), cy = Y(p.y), mark;
        if (p.cross) {
          mark = svg("path", { d: "M" + (cx - 4) + " " + (cy - 4) + "l8 8m0 -8l-8 8", class: "point missed" });
        } else {
          mark = svg("circle", { cx: cx, cy: cy, r: s.faint ? 3.5 : 5, fill: s.color, class: "point" + (s.faint ? " faint" : "") });
        }
        setAttrs(mark, { "data-key": p.id, "data-status": p.status, tabindex: 0 });
        mark.addEventListener("mouseenter", function (e) { on.hover(p, e); });
        mark.addEventListener("mouseleave", function () { on.hover(null); });
        mark.addEventListener("click", function () { on.select(p); });
        mark.addEventListener("keydown", function (e) { if (e.key === "Enter") on.select(p); });
        layer.append(mark);
        if (p.rank) {
          layer.append(svg("circle", { cx: cx, cy: cy, r: 9, class: "ring" }));
          ranks.push({ x: cx, y: cy, rank: p.rank, layer: layer });
        }
      });
    });
    placeRanks(ranks, width, height);
    return root;
  }

  // Each rank label (best first) goes to the nearest spot round its point that covers no label placed
  // before it and no other ring; close points (#1-#3 of the default search) were drawn on top of each other.
  var OFFSETS = [[11, -9], [11, 13], [-11, -9], [-11, 13], [11, -22], [11, 26], [-11, -22], [-11, 26], [24, 3], [-24, 3], [11, -35], [11, 39]];
  function placeRanks(ranks, width, height) {
    var taken = ranks.map(function (r) { return { x0: r.x - 9, x1: r.x + 9, y0: r.y - 9, y1: r.y + 9 }; });
    ranks.sort(function (a, b) { return a.rank - b.rank; }).forEach(function (r) {
      var text = "#" + r.rank, w = 7 * text.length, best = null, least = Infinity;
      OFFSETS.forEach(function (o) {
        if (least === 0) return;
        var x0 = o[0] > 0 ? r.x + o[0] : r.x + o[0] - w, box = { x0: x0, x1: x0 + w, y0: r.y + o[1] - 10, y1: r.y + o[1] + 2 };
        var overlap = box.x0 < 0 || box.x1 > width || box.y0 < 0 || box.y1 > height ? 1e6 : 0;
        taken.forEach(function (t) {
          var dx = Math.min(box.x1, t.x1) - Math.max(box.x0, t.x0), dy = Math.min(box.y1, t.y1) - Math.max(box.y0, t.y0);
          if (dx > 0 && dy > 0 && !(t.x0 === r.x - 9 && t.y0 === r.y - 9)) overlap += dx * dy;
        });
        if (overlap < least) { least = overlap; best = { o: o, box: box }; }
      });
      taken.push(best.box);
      r.layer.append(svg("text", { x: best.o[0] > 0 ? r.x + best.o[0] : r.x + best.o[0], y: r.y + best.o[1], class: "rank",
        "text-anchor": best.o[0] > 0 ? "start" : "end", text: text }));
    });
  }

  function legend(host, series, hidden, redraw) {
    host.textContent = "";
    series.forEach(function (s) {
      var item = el("button", { type: "button", class: "legend-item" + (hidden[s.name] ? " off" : ""), title: "show or hide",
        onclick: function () { hidden[s.name] = !hidden[s.name]; redraw(); } },
        el("span", { class: "swatch", style: "background:" + s.color }), s.name + " (" + s.count + ")");
      host.append(item);
    });
  }

  function tooltip() {
    var tip = el("div", { class: "tooltip", role: "tooltip" });
    document.body.append(tip);
    return function (content, event) {
      if (!content) { tip.style.display = "none"; return; }
      tip.textContent = "";
      append(tip, content);
      tip.style.display = "block";
      var x = event.clientX + 14, y = event.clientY + 14;
      if (x + tip.offsetWidth > window.innerWidth) x = event.clientX - tip.offsetWidth - 14;
      if (y + tip.offsetHeight > window.innerHeight) y = event.clientY - tip.offsetHeight - 14;
      tip.style.left = x + "px";
      tip.style.top = y + "px";
    };
  }

  function axisPicker(label, fields, value, names, onchange) {
    var select = el("select", { onchange: function () { onchange(select.value); } });
    fields.forEach(function (f) { select.append(el("option", { value: f, selected: f === value, text: names(f) })); });
    return el("label", {}, label + " ", select);
  }

  function table(rows, columns, options) {
    // columns: [{name, value(row) -> number|string|null, cell(row)? -> node}]; sortable by any column
    var state = { column: options.sortColumn || 0, descending: !!options.descending };
    var body = el("tbody");
    var head = el("tr");
    var count = el("p", { class: "count" });
    var wrap = el("div", { class: "table-wrap" }, el("table", { class: "ledger", id: options.id }, el("thead", {}, head), body));
    columns.forEach(function (c, i) {
      head.append(el("th", { scope: "col", tabindex: 0, "aria-sort": "none", onclick: function () { sortBy(i); },
        onkeydown: function (e) { if (e.key === "Enter") sortBy(i); } }, c.name));
    });
    function sortBy(i) {
      state.descending = state.column === i ? !state.descending : !!columns[i].descending;
      state.column = i;
      render();
    }
    function compare(a, b) {
      var va = columns[state.column].value(a), vb = columns[state.column].value(b);
      var missingA = va === null || va === undefined || va === "", missingB = vb === null || vb === undefined || vb === "";
      if (missingA || missingB) return missingA === missingB ? (options.tiebreak ? options.tiebreak(a, b) : 0) : missingA ? 1 : -1;  // blanks last
      var order = typeof va === "number" && typeof vb === "number" ? va - vb : String(va).localeCompare(String(vb), "en", { numeric: true });
      return (state.descending ? -order : order) || (options.tiebreak ? options.tiebreak(a, b) : 0);
    }
    function render() {
      var shown = rows.filter(options.filter || function () { return true; }).sort(compare);
      body.textContent = "";
      shown.forEach(function (row) {
        var tr = el("tr", { "data-key": row.key, "data-status": row.status, tabindex: 0 });
        if (options.select) {
          tr.addEventListener("click", function (e) { if (e.target.tagName !== "A") options.select(row); });
          tr.addEventListener("keydown", function (e) { if (e.key === "Enter") options.select(row); });
        }
        columns.forEach(function (c) {
          var v = c.value(row);
          tr.append(el("td", { class: typeof v === "number" ? "num" : null }, c.cell ? c.cell(row) : fmt(v)));
        });
        body.append(tr);
      });
      Array.prototype.forEach.call(head.children, function (th, i) {
        th.setAttribute("aria-sort", i === state.column ? (state.descending ? "descending" : "ascending") : "none");
      });
      count.textContent = "showing " + shown.length + " of " + rows.length + " rows";
    }
    render();
    return { node: el("div", {}, count, wrap), render: render };
  }

  function section(title, id) {
    return el("section", { id: id }, el("h2", { text: title }));
  }
  function notes(lines) {
    return lines.length ? el("ul", { class: "notes" }, lines.map(function (line) { return el("li", { text: line }); })) : null;
  }
  function keyValues(object, units) {
    var keys = Object.keys(object || {});
    if (!keys.length) return el("p", { class: "muted", text: "none" });
    return el("table", { class: "kv" }, el("tbody", {}, keys.map(function (k) {
      var v = object[k];
      return el("tr", {}, el("th", { scope: "row", text: units ? fieldName(k, units) : k }),
        el("td", { text: v !== null && typeof v === "object" ? JSON.stringify(v) : fmt(v) }));
    })));
  }

  // --- report.html ---
  function report(data) {
    var app = document.getElementById("app");
    app.textContent = "";
    document.title = data.title + " — Spica report";
    var goal = data.goal, units = goal.units, candidates = data.candidates;
    var byKey = {};
    candidates.forEach(function (c) { byKey[c.key] = c; });
    var feasible = candidates.filter(function (c) { return c.status === "feasible"; });
    var screened = candidates.filter(function (c) { return c.status === "screened"; });
    var tally = Object.keys(data.tallies).filter(function (k) { return data.tallies[k] || k !== "screened"; })
      .map(function (k) { return data.tallies[k] + " " + k.replace(/_/g, " "); }).join(", ");
    var wall = data.timings.wall_seconds;
    app.append(el("header", {},
      el("h1", { text: data.title }),
      el("p", { class: "lede", text: candidates.length + " candidates replayed: " + tally + (wall !== undefined ? "; wall " + fmt(wall) + " s" : "") }),
      notes(data.notes),
      el("p", { class: "muted" }, "plan " + String(data.fingerprint || "").slice(0, 12) + " · ",
        el("a", { href: "#config", text: "config" }), " · ", el("a", { href: "#ledger-section", text: "ledger" }), " · ",
        el("a", { href: "#files", text: "files" }))));

    // the plot, with what PNG shows by default: score vs GPUs, the SLA-bounded latency vs GPUs, or the front
    var sla = goal.sla_bounds || {};
    var slaMetric = !goal.pareto && goal.sla_constrained ? Object.keys(sla)[0] : null;
    var fields = numericFields(feasible, goal.objectives);
    var axes = goal.pareto ? { x: goal.objectives[0], y: goal.objectives[1] } : { x: "gpus", y: slaMetric || goal.objectives[0] };
    var hidden = {};
    var plotHost = el("div", { class: "plot-host", id: "plot" });
    var legendHost = el("div", { class: "legend" });
    var show = tooltip();
    var groups = [];
    feasible.forEach(function (c) { if (groups.indexOf(c.group) < 0) groups.push(c.group); });
    groups.sort();
    var missedName = "infeasible / failed";
    var screenedName = "screened (a shorter replay; not the answer)";
    function names(f) { return fieldName(f, units); }
    function drawn() {
      var series = groups.map(function (g, i) {
        var members = feasible.filter(function (c) { return c.group === g; });
        return { name: g, color: PALETTE[i % PALETTE.length], count: members.length, points: members.map(function (c) { return point(c, false); }) };
      });
      var plotted = function (c) { return fieldValue(c, axes.x) !== undefined && fieldValue(c, axes.y) !== undefined; };
      var short = screened.filter(plotted);
      if (short.length) series.push({ name: screenedName, color: "#bbb", count: short.length, points: short.map(function (c) { return point(c, false); }) });
      var missed = candidates.filter(function (c) { return c.status !== "feasible" && c.status !== "screened" && plotted(c); });
      if (missed.length) series.push({ name: missedName, color: "#999", count: missed.length, points: missed.map(function (c) { return point(c, true); }) });
      return series;
    }
    function point(c, cross) {
      return { x: fieldValue(c, axes.x), y: fieldValue(c, axes.y), id: c.key, status: c.status, rank: c.rank, cross: cross, candidate: c };
    }
    function redraw() {
      var series = drawn();
      legend(legendHost, series, hidden, redraw);
      var visible = series.filter(function (s) { return !hidden[s.name]; });
      var front = goal.pareto && axes.x === goal.objectives[0] && axes.y === goal.objectives[1];
      if (front) {
        var line = feasible.filter(function (c) { return c.front; }).map(function (c) { return point(c, false); }).sort(function (a, b) { return a.x - b.x; });
        visible.push({ name: "front", color: "#000", points: [], line: line });
      }
      var ys = [];
      visible.forEach(function (s) { s.points.forEach(function (p) { ys.push(p.y); }); });
      var log = ys.length && Math.min.apply(null, ys) > 0 && Math.max.apply(null, ys) > 20 * Math.min.apply(null, ys);
      drawPlot(plotHost, {
        x: { key: axes.x, label: names(axes.x) }, y: { key: axes.y, label: names(axes.y), log: log }, series: visible,
        hlines: axes.y in sla ? [{ value: sla[axes.y], label: "SLA: " + axes.y + " ≤ " + fmt(sla[axes.y]) }] : [],
        vlines: axes.x in sla ? [{ value: sla[axes.x], label: "SLA ≤ " + fmt(sla[axes.x]) }] : []
      }, {
        hover: function (p, e) { show(p ? summaryOf(p.candidate) : null, e); },
        select: function (p) { choose(p.candidate.key); }
      });
    }
    var plotSection = section(goal.pareto ? "Front" : "Candidates", "plot-section");
    plotSection.append(el("div", { class: "pickers" },
      axisPicker("x", fields, axes.x, names, function (v) { axes.x = v; redraw(); }),
      axisPicker("y", fields, axes.y, names, function (v) { axes.y = v; redraw(); }),
      el("span", { class: "muted", text: "hover a point for its deployment, click it for its files; click a legend entry to hide it" })),
      plotHost, legendHost);
    app.append(plotSection);

    var details = section("Candidate", "details");
    details.hidden = true;
    app.append(details);

    function summaryOf(c) {
      var lines = [el("strong", { text: (c.rank ? "#" + c.rank + " " : "") + c.label })];
      lines.push(el("div", { text: c.status + (c.reason ? ": " + c.reason : "") + " · " + c.gpus + " GPUs" }));
      Object.keys(c.objectives).forEach(function (k) { lines.push(el("div", { text: names(k) + ": " + fmt(c.objectives[k]) })); });
      ["mean_ttft_ms", "mean_tpot_ms"].forEach(function (k) { if (k in c.metrics) lines.push(el("div", { text: names(k) + ": " + fmt(c.metrics[k]) })); });
      lines.push(el("div", { class: "muted", text: c.knobs }));
      return lines;
    }
    function choose(key) {
      if (location.hash !== "#candidate=" + key) location.hash = "candidate=" + key;
      else open(key);
    }
    function open(key) {
      var c = byKey[key];
      if (!c) return;
      details.textContent = "";
      details.hidden = false;
      details.append(el("h2", { text: (c.rank ? "#" + c.rank + " " : "") + c.label }),
        el("p", { class: "lede", text: c.status + (c.reason ? ": " + c.reason : "") + " · " + c.gpus + " GPUs · " + c.knobs }));
      if (c.files) {
        details.append(el("p", { class: "files" }, "Files: ",
          el("a", { href: href(c.files.manifest || ""), hidden: !c.files.manifest, class: "manifest", text: "dynamo.yaml (manifest)" }), " ",
          el("a", { href: href(c.files.replay), class: "replay", text: "replay.json (Replay input)" }), " ",
          el("a", { href: href(c.files.candidate), class: "candidate", text: "candidate.json" })));
      } else {
        details.append(el("p", { class: "muted", text: "Not among the selected: no deploy folder was written for it. Its Replay input and config are below." }));
      }
      if (c.undeployable) details.append(el("p", { class: "warn", text: "No manifest: " + c.undeployable }));
      if (c.spread !== null && c.spread !== undefined) details.append(el("p", { text: "Spread over repeated kv_router replays: ± " + fmt(c.spread) + " %" }));
      details.append(el("div", { class: "columns" },
        el("div", {}, el("h3", { text: "Objectives" }), keyValues(c.objectives, units), el("h3", { text: "Metrics" }), keyValues(c.metrics, {})),
        el("div", {}, el("h3", { text: "Config (unrolled)" }), keyValues(c.config))),
        el("details", {}, el("summary", { text: "Replay input" }), el("pre", { text: JSON.stringify(c.replay, null, 1) })),
        el("p", { class: "muted" }, "key " + c.key + " · branch " + c.branch + ", round " + c.round +
          (c.step_of ? " · a replica step from " : ""), c.step_of ? el("a", { href: "#candidate=" + encodeURIComponent(c.step_of), text: c.step_of }) : "",
          " · replayed in " + fmt(c.seconds) + " s"));
      details.scrollIntoView({ block: "nearest" });
      Array.prototype.forEach.call(document.querySelectorAll(".chosen"), function (n) { n.classList.remove("chosen"); });
      Array.prototype.forEach.call(document.querySelectorAll('[data-key="' + CSS.escape(key) + '"]'), function (n) { n.classList.add("chosen"); });
    }

    // not scored: grouped by reason
    var unscored = candidates.filter(function (c) { return c.status !== "feasible" && c.status !== "screened"; });
    var reasons = section("Not scored (" + unscored.length + ")", "unscored");
    if (unscored.length) {
      var byReason = {};
      unscored.forEach(function (c) {
        var category = (c.reason || c.status).split(":")[0];
        (byReason[category] = byReason[category] || []).push(c);
      });
      reasons.append(table(Object.keys(byReason).map(function (r) { return { key: r, members: byReason[r] }; }), [
        { name: "reason", value: function (r) { return r.key; } },
        { name: "candidates", value: function (r) { return r.members.length; } },
        { name: "status", value: function (r) { return r.members.map(function (c) { return c.status; }).filter(function (s, i, a) { return a.indexOf(s) === i; }).join(", "); } },
        { name: "e.g.", value: function (r) { return r.members[0].reason || ""; },
          cell: function (r) { return el("a", { href: "#candidate=" + encodeURIComponent(r.members[0].key), text: (r.members[0].reason || r.members[0].status).slice(0, 240) }); } }
      ], { id: "reasons", sortColumn: 1, descending: true }).node);
    } else {
      reasons.append(el("p", { class: "muted", text: "every candidate was scored" }));
    }
    app.append(reasons);

    // the ledger
    var ledgerSection = section("Ledger (" + candidates.length + ")", "ledger-section");
    var filters = { text: "", status: "", gpus: "" };
    var statuses = [], gpuCounts = [];
    candidates.forEach(function (c) {
      if (statuses.indexOf(c.status) < 0) statuses.push(c.status);
      if (gpuCounts.indexOf(c.gpus) < 0) gpuCounts.push(c.gpus);
    });
    gpuCounts.sort(function (a, b) { return a - b; });
    var columns = [
      { name: "#", value: function (c) { return c.rank; } },
      { name: "deployment", value: function (c) { return c.label; } }
    ].concat(candidates.some(function (c) { return c.system !== candidates[0].system; })  // systems searched
      ? [{ name: "system", value: function (c) { return c.system; } }] : []
    ).concat([
      { name: "status", value: function (c) { return c.status; } },
      { name: "GPUs", value: function (c) { return c.gpus; } }
    ]).concat(goal.objectives.map(function (k) {
      return { name: names(k), value: function (c) { return c.objectives[k]; }, descending: goal.minimized.indexOf(k) < 0 };
    })).concat(COSTS.filter(function (cost) {  // what each deployment costs, when prices were given
      return goal.objectives.indexOf(cost[0]) < 0 && candidates.some(function (c) { return cost[1] in c.metrics; });
    }).map(function (cost) {
      return { name: cost[2], value: function (c) { return c.metrics[cost[1]]; } };
    })).concat([
      { name: "TTFT ms", value: function (c) { return c.metrics.mean_ttft_ms; } },
      { name: "TPOT ms", value: function (c) { return c.metrics.mean_tpot_ms; } },
      { name: "knobs", value: function (c) { return c.knobs; } },
      { name: "reason", value: function (c) { return c.reason; } },
      { name: "round", value: function (c) { return Number(c.round); },
        cell: function (c) { return c.step_of ? el("span", { title: "a replica step from " + c.step_of, text: c.round + ", step" }) : String(c.round); } },
      { name: "key", value: function (c) { return c.key; },
        cell: function (c) { return el("a", { href: "#candidate=" + encodeURIComponent(c.key), text: c.key }); } }
    ]);
    var first = goal.objectives[0], sign = goal.minimized.indexOf(first) < 0 ? -1 : 1;
    var ledger = table(candidates, columns, {
      id: "ledger", sortColumn: 0,
      tiebreak: function (a, b) {  // the selection by rank, then the feasible best first, then the rest best first
        var fa = a.status === "feasible" ? 0 : 1, fb = b.status === "feasible" ? 0 : 1, va = a.objectives[first], vb = b.objectives[first];
        if (fa !== fb) return fa - fb;
        if (va === undefined || vb === undefined) return va === vb ? 0 : va === undefined ? 1 : -1;
        return sign * (va - vb);
      },
      select: function (c) { choose(c.key); },
      filter: function (c) {
        if (filters.status && c.status !== filters.status) return false;
        if (filters.gpus && String(c.gpus) !== filters.gpus) return false;
        if (!filters.text) return true;
        return [c.label, c.key, c.status, c.reason || "", c.knobs, c.group].join(" ").toLowerCase().indexOf(filters.text) >= 0;
      }
    });
    var search = el("input", { type: "search", placeholder: "filter: deployment, knob, reason…", "aria-label": "filter rows",
      oninput: function () { filters.text = search.value.trim().toLowerCase(); ledger.render(); } });
    var statusPick = el("select", { "aria-label": "status", onchange: function () { filters.status = statusPick.value; ledger.render(); } },
      el("option", { value: "", text: "every status" }), statuses.map(function (s) { return el("option", { value: s, text: s }); }));
    var gpuPick = el("select", { "aria-label": "GPUs", onchange: function () { filters.gpus = gpuPick.value; ledger.render(); } },
      el("option", { value: "", text: "any GPUs" }), gpuCounts.map(function (g) { return el("option", { value: String(g), text: g + " GPUs" }); }));
    ledgerSection.append(el("div", { class: "pickers" }, search, statusPick, gpuPick), ledger.node);
    app.append(ledgerSection);

    var versions = section("Versions and calibration", "versions");
    versions.append(keyValues(data.versions));
    if (Object.keys(data.engine_versions || {}).length) {
      var engines = {};
      Object.keys(data.engine_versions).forEach(function (b) {
        var v = data.engine_versions[b];
        engines[b] = v && typeof v === "object" ? "scored with perf data for " + v.scored + "; the manifest runs " + v.runtime : v;
      });
      versions.append(el("h3", { text: "Engines" }), keyValues(engines));
    }
    versions.append(el("h3", { text: "Calibration" }),
      data.calibration ? keyValues(data.calibration) : el("p", { class: "muted", text: "none: scored with uncalibrated timing" }));
    app.append(versions);
    var config = section("Config (plan.yaml)", "config");
    config.append(el("details", {}, el("summary", { text: "the frozen plan that produced these results" }), el("pre", { text: data.plan })));
    app.append(config);
    var files = section("Files", "files");
    files.append(el("ul", {}, data.files.map(function (f) { return el("li", {}, el("a", { href: href(f), text: f })); })));
    app.append(files);

    redraw();
    window.addEventListener("resize", redraw);
    window.addEventListener("hashchange", fromHash);
    function fromHash() {
      var match = /^#candidate=(.+)$/.exec(location.hash);
      if (match) open(decodeURIComponent(match[1]));
    }
    fromHash();
  }

  // --- compare.html ---
  function compare(data) {
    var app = document.getElementById("app");
    app.textContent = "";
    document.title = data.title + " — Spica";
    var searches = data.searches;
    app.append(el("header", {}, el("h1", { text: data.title })));
    var objectives = [], units = {};
    searches.forEach(function (s) {
      s.goal.objectives.forEach(function (o) { if (objectives.indexOf(o) < 0) objectives.push(o); });
      Object.keys(s.goal.units).forEach(function (k) { units[k] = s.goal.units[k]; });
    });
    function names(f) { return fieldName(f, units); }
    var best = section("Best of each", "best");
    var rows = searches.map(function (s, i) {
      var b = s.candidates.filter(function (c) { return c.key === s.best; })[0] || null;
      return { key: String(i + 1), index: i + 1, search: s, best: b, status: "feasible" };
    });
    best.append(table(rows, [
      { name: "#", value: function (r) { return r.index; } },
      { name: "search", value: function (r) { return r.search.label; },
        cell: function (r) { return r.search.report ? el("a", { href: href(r.search.report), text: r.search.label }) : r.search.label; } },
      { name: "goal", value: function (r) { return r.search.goal.target; } },
      { name: "replayed", value: function (r) { return r.search.replayed; } },
      { name: "feasible", value: function (r) { return r.search.candidates.length; } },
      { name: "front", value: function (r) { return r.search.goal.pareto ? r.search.candidates.filter(function (c) { return c.front; }).length : null; } },
      { name: "best deployment", value: function (r) { return r.best ? r.best.label : "(none feasible)"; } },
      { name: "GPUs", value: function (r) { return r.best ? r.best.gpus : null; } }
    ].concat(objectives.map(function (k) {
      return { name: names(k), value: function (r) { return r.best ? r.best.objectives[k] : null; } };
    })).concat([
      { name: "TTFT ms", value: function (r) { return r.best ? r.best.metrics.mean_ttft_ms : null; } },
      { name: "TPOT ms", value: function (r) { return r.best ? r.best.metrics.mean_tpot_ms : null; } },
      { name: "wall s", value: function (r) { return r.search.wall_seconds; } }
    ]), { id: "searches", sortColumn: 0 }).node);
    app.append(best);

    var all = [];
    searches.forEach(function (s) { all = all.concat(s.candidates); });
    var pareto = searches.every(function (s) { return s.goal.pareto; });
    var axes = pareto ? { x: objectives[0], y: objectives[1] } : { x: "gpus", y: objectives[0] };
    var fields = numericFields(all, objectives);
    var hidden = {}, plotHost = el("div", { class: "plot-host", id: "plot" }), legendHost = el("div", { class: "legend" }), show = tooltip();
    function redraw() {
      var series = searches.map(function (s, i) {
        var points = s.candidates.filter(function (c) { return fieldValue(c, axes.x) !== undefined && fieldValue(c, axes.y) !== undefined; })
          .map(function (c) { return { x: fieldValue(c, axes.x), y: fieldValue(c, axes.y), id: c.key, status: c.status, rank: null, candidate: c, search: s }; });
        var chosen = points.filter(function (p) { return s.goal.pareto ? p.candidate.front : p.id === s.best; }).sort(function (a, b) { return a.x - b.x; });
        chosen.forEach(function (p) { p.rank = s.goal.pareto ? null : i + 1; });
        return { name: "#" + (i + 1) + " " + s.label, color: PALETTE[i % PALETTE.length], count: points.length, points: points,
          line: s.goal.pareto && axes.x === s.goal.objectives[0] && axes.y === s.goal.objectives[1] ? chosen : null };
      });
      legend(legendHost, series, hidden, redraw);
      drawPlot(plotHost, { x: { key: axes.x, label: names(axes.x) }, y: { key: axes.y, label: names(axes.y) },
        series: series.filter(function (s) { return !hidden[s.name]; }) }, {
        hover: function (p, e) {
          show(p ? [el("strong", { text: p.search.label }), el("div", { text: p.candidate.label + " · " + p.candidate.gpus + " GPUs" }),
            el("div", { text: names(axes.x) + ": " + fmt(p.x) }), el("div", { text: names(axes.y) + ": " + fmt(p.y) }),
            el("div", { class: "muted", text: p.candidate.knobs })] : null, e);
        },
        select: function (p) { if (p.search.report) location.href = href(p.search.report) + "#candidate=" + encodeURIComponent(p.id); }
      });
    }
    var plot = section(pareto ? "Fronts overlaid" : "Feasible candidates of each search", "plot-section");
    plot.append(el("div", { class: "pickers" },
      axisPicker("x", fields, axes.x, names, function (v) { axes.x = v; redraw(); }),
      axisPicker("y", fields, axes.y, names, function (v) { axes.y = v; redraw(); }),
      el("span", { class: "muted", text: pareto ? "lines join each search's front; click a point to open it in its report" : "ringed: each search's best; click a point to open it in its report" })),
      plotHost, legendHost);
    app.append(plot);

    var diff = section("What differs in their plans", "differences");
    if (data.differences.length) {
      var head = el("tr", {}, el("th", { text: "field" }), searches.map(function (s, i) { return el("th", { text: "#" + (i + 1) + " " + s.label }); }));
      diff.append(el("div", { class: "table-wrap" }, el("table", { class: "ledger", id: "differences-table" }, el("thead", {}, head),
        el("tbody", {}, data.differences.map(function (d) {
          return el("tr", {}, el("th", { scope: "row", text: d.field }), d.values.map(function (v) {
            return el("td", { text: typeof v === "string" ? v : JSON.stringify(v) });
          }));
        })))));
    } else {
      diff.append(el("p", { class: "muted", text: "their plans are the same" }));
    }
    app.append(diff);
    redraw();
    window.addEventListener("resize", redraw);
  }

  return { report: report, compare: compare };
})();
