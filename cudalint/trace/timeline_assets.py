"""The timeline page's inline style and script (timeline.py). No external asset, no request: the
page's Content-Security-Policy forbids any (`default-src 'none'`).

The script draws lanes on one canvas: per lane and pixel column one marker of each kind (so
100,000 events cost about as much as the page's width), llama.cpp spans as bars, overlaps of two
threads in one context as red bars, fork/spawn links as lines; and NVML memory per GPU on a
second canvas. Hovering shows the events under the pointer; a finding's "event N" link marks
that event's time on the axis.
"""

CSS = """
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#222;background:#fff}
header{background:#20232a;color:#eee;padding:12px 20px}header h1{font-size:18px;margin:0 0 4px}
header .status{margin:0}section{padding:4px 20px}h2{font-size:16px;border-bottom:1px solid #ddd;padding-bottom:3px}
h3{font-size:14px;margin:14px 0 4px}
table{border-collapse:collapse;width:100%;font-size:13px}th,td{border-bottom:1px solid #eee;padding:3px 6px;
text-align:left;vertical-align:top}th{background:#f4f4f4}
.evidence{color:#555;font-size:12px;margin-top:2px}
.badge{border-radius:3px;padding:1px 6px;color:#fff;font-size:12px;white-space:nowrap}
.badge.confirmed{background:#c62828}.badge.refuted{background:#2e7d32}.badge.not-reached{background:#757575}
.badge.not-checked{background:#9e9e9e}
.legend .k{margin-right:12px;font-size:12px;white-space:nowrap}.k.e{color:#1f77b4}.k.I{color:#d62728}
.k.i{color:#e377c2}.k.f{color:#2ca02c}.k.c{color:#d62728}.k.u{color:#8c8c00}
.timeline{position:relative;border:1px solid #ddd;overflow-x:auto}
.tip{position:absolute;background:#20232a;color:#fff;font-size:12px;padding:4px 6px;border-radius:3px;
pointer-events:none;max-width:520px;z-index:2}
.cursor{position:absolute;top:0;bottom:0;width:2px;background:#ff9800;pointer-events:none}
section.events{content-visibility:auto;contain-intrinsic-size:auto 3000px}
tr.hl{background:#fff3cd}.none{color:#666}.procs{font-size:13px;margin:0}
"""

SCRIPT = r"""
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("trace-data").textContent);
  var COLOR = {e: "#1f77b4", I: "#d62728", i: "#e377c2", m: "#9467bd", f: "#2ca02c", s: "#2ca02c",
               p: "#7f7f7f", c: "#d62728", u: "#8c8c00", x: "#444"};
  var KINDS = "eIimfspcux";
  var LABEL_W = 230, LANE_H = 24, TOP = 22;
  var box = document.getElementById("timeline"), cv = document.getElementById("lanes");
  var tip = document.getElementById("tip");
  var W = Math.max(700, box.clientWidth - 2), n = D.lanes.length, H = TOP + n * LANE_H + 6;
  var end = Math.max(D.end, 1), plotW = W - LABEL_W - 16;
  var ratio = window.devicePixelRatio || 1;
  function setup(c, w, h) {
    c.width = w * ratio; c.height = h * ratio; c.style.width = w + "px"; c.style.height = h + "px";
    var g = c.getContext("2d"); g.scale(ratio, ratio); g.font = "12px sans-serif"; g.textBaseline = "middle";
    return g;
  }
  function x(t) { return LABEL_W + t / end * plotW; }
  function y(l) { return TOP + l * LANE_H + LANE_H / 2; }
  function nice(v) {
    var p = Math.pow(10, Math.floor(Math.log(v) / Math.LN10)), m = v / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
  }
  function fmt(ms) { return ms >= 1000 ? (ms / 1000).toFixed(ms >= 10000 ? 0 : 1) + " s" : Math.round(ms) + " ms"; }
  function axis(g, h) {
    var step = nice(end / 8);
    g.strokeStyle = "#e3e3e3"; g.fillStyle = "#666";
    for (var t = 0; t <= end + 1e-9; t += step) {
      var xx = Math.round(x(t)) + 0.5;
      g.beginPath(); g.moveTo(xx, TOP - 6); g.lineTo(xx, h); g.stroke(); g.fillText(fmt(t), xx + 3, 9);
    }
  }
  var g = setup(cv, W, H);
  for (var l = 0; l < n; l++) {
    g.fillStyle = l % 2 ? "#f6f7f9" : "#fff"; g.fillRect(0, TOP + l * LANE_H, W, LANE_H);
    g.fillStyle = "#222"; g.fillText(D.lanes[l].length > 34 ? D.lanes[l].slice(0, 33) + "\u2026" : D.lanes[l], 6, y(l));
  }
  axis(g, H);

  // spans of threads inside a llama.cpp context, and where two threads overlap in one context
  var byInst = {};
  D.spans.forEach(function (s) {
    (byInst[s[3]] = byInst[s[3]] || []).push(s);
    g.fillStyle = "rgba(140,140,0,0.45)";
    g.fillRect(x(s[1]), y(s[0]) - 4, Math.max(1, x(s[2]) - x(s[1])), 8);
  });
  var overlaps = [];
  Object.keys(byInst).forEach(function (k) {
    var list = byInst[k].slice().sort(function (a, b) { return a[1] - b[1]; }), active = [];
    list.forEach(function (s) {
      active = active.filter(function (a) { return a[2] > s[1]; });
      active.forEach(function (a) {
        if (a[0] !== s[0]) overlaps.push([a[0], s[0], s[1], Math.min(a[2], s[2]), a, s]);
      });
      active.push(s);
    });
  });
  g.fillStyle = "rgba(214,39,40,0.85)";
  overlaps.forEach(function (o) {
    var w = Math.max(2, x(o[3]) - x(o[2]));
    g.fillRect(x(o[2]), y(o[0]) - 6, w, 12); g.fillRect(x(o[2]), y(o[1]) - 6, w, 12);
  });

  // forks and spawns: parent lane -> child lane
  g.strokeStyle = "#2ca02c"; g.lineWidth = 1.5;
  D.links.forEach(function (k) {
    g.beginPath(); g.moveTo(x(k[1]), y(k[0])); g.lineTo(x(k[3]), y(k[2])); g.stroke();
  });
  g.lineWidth = 1;

  // markers: one per lane, pixel column and kind
  var seen = new Set(), hits = new Map();
  for (var i = 0; i < D.ev.length; i++) {
    var e = D.ev[i], px = Math.round(x(e[0])), lane = e[1], kind = KINDS.indexOf(e[2]);
    var cell = lane * 8192 + px, h = hits.get(cell);
    if (h) { h.n++; } else { hits.set(cell, {label: D.labels[e[4]], seq: e[3], n: 1}); }
    var key = cell * 16 + kind;
    if (seen.has(key)) continue;
    seen.add(key);
    var yy = y(lane);
    g.fillStyle = COLOR[e[2]] || "#000";
    g.beginPath();
    if (e[2] === "e") { g.moveTo(px, yy - 6); g.lineTo(px + 5, yy); g.lineTo(px, yy + 6); g.lineTo(px - 5, yy); }
    else if (e[2] === "f" || e[2] === "s") { g.moveTo(px, yy - 6); g.lineTo(px + 6, yy + 5); g.lineTo(px - 6, yy + 5); }
    else if (e[2] === "c") { g.rect(px - 5, yy - 5, 10, 10); }
    else if (e[2] === "I") { g.arc(px, yy, 6, 0, 7); }
    else { g.arc(px, yy, 3.5, 0, 7); }
    g.fill();
    if (e[2] === "I") { g.fillStyle = "#d62728"; g.fillText(D.labels[e[4]].split(" ")[0].slice(0, 40), px + 8, yy - 8); }
  }

  cv.addEventListener("mousemove", function (ev) {
    var r = cv.getBoundingClientRect(), mx = ev.clientX - r.left, my = ev.clientY - r.top;
    var lane = Math.floor((my - TOP) / LANE_H), out = [];
    if (lane >= 0 && lane < n) {
      for (var d = -3; d <= 3; d++) {
        var h = hits.get(lane * 8192 + Math.round(mx) + d);
        if (h) out.push(h.label + (h.n > 1 ? " (+" + (h.n - 1) + " more)" : ""));
      }
      overlaps.forEach(function (o) {
        if ((o[0] === lane || o[1] === lane) && mx >= x(o[2]) - 2 && mx <= x(o[3]) + 2)
          out.push("overlap: " + D.lanes[o[4][0]] + " (" + D.labels[o[4][4]] + ") and " + D.lanes[o[5][0]] + " (" +
                   D.labels[o[5][4]] + ") inside one context");
      });
    }
    if (!out.length) { tip.hidden = true; return; }
    tip.textContent = out.slice(0, 6).join(" | ");
    tip.style.left = Math.min(mx + 12, W - 300) + "px"; tip.style.top = (my + 14) + "px"; tip.hidden = false;
  });
  cv.addEventListener("mouseleave", function () { tip.hidden = true; });

  // a finding's "event N": mark its time on the axis and its row
  var cursor = document.createElement("div"); cursor.className = "cursor"; cursor.hidden = true; box.appendChild(cursor);
  function mark(seq) {
    var row = document.getElementById("ev-" + seq);
    Array.prototype.forEach.call(document.querySelectorAll("tr.hl"), function (r) { r.classList.remove("hl"); });
    if (!row) return;
    row.classList.add("hl");
    cursor.style.left = x(parseFloat(row.getAttribute("data-t"))) + "px"; cursor.hidden = false;
  }
  document.addEventListener("click", function (ev) {
    var a = ev.target.closest && ev.target.closest("a[data-seq]");
    if (a) mark(a.getAttribute("data-seq"));
  });
  if (location.hash.indexOf("#ev-") === 0) mark(location.hash.slice(4));

  // NVML: memory per physical GPU over time
  if (D.gpus.length) {
    var gc = document.getElementById("gpus"), GH = 40 + D.gpus.length * 60, gg = setup(gc, W, GH);
    var max = 1;
    D.gpus.forEach(function (s) { s.pts.forEach(function (p) { if (p[1] > max) max = p[1]; }); });
    axis(gg, GH);
    D.gpus.forEach(function (s, k) {
      var base = TOP + (k + 1) * 60 - 8;
      gg.fillStyle = s.expected === false ? "#c62828" : "#2e7d32";
      gg.fillText("GPU " + s.index + (s.expected === null ? "" : s.expected ? " (selected)" : " (NOT selected)"), 6, base - 24);
      gg.strokeStyle = gg.fillStyle; gg.beginPath();
      var prev = 0;
      s.pts.forEach(function (p, j) {
        var xx = x(p[0]), yy = base - p[1] / max * 44;
        if (j === 0) gg.moveTo(xx, base); else gg.lineTo(xx, base - prev / max * 44);
        gg.lineTo(xx, yy); prev = p[1];
      });
      gg.lineTo(x(end), base - prev / max * 44); gg.stroke();
      gg.fillText((max / 1048576).toFixed(0) + " MiB peak scale", W - 150, base - 24);
    });
  }
  document.body.setAttribute("data-drawn", String(D.ev.length));
  // milliseconds from navigation start until drawn (benchmarks/timeline_load.py reads it)
  document.body.setAttribute("data-ms", String(Math.round(performance.now())));
})();
"""
