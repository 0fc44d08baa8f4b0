// Joint traces under the videos, on the same time axis: one panel per arm (state solid, action dashed),
// idle spans shaded, safety and dropped-frame marks as ticks, and a cursor that follows the players.
// The players' frame is read from #frame-label's data-frame (review.js sets it); a click on a panel
// moves the scrubber there, so review.js seeks every video as for any other scrub.
"use strict";
(() => {
  const section = document.getElementById("traces");
  const holder = document.getElementById("trace-panels");
  const status = document.getElementById("trace-status");
  const label = document.getElementById("frame-label");
  const scrubber = document.getElementById("scrubber");
  const COLORS = ["#2764c5", "#c5274f", "#2f9e44", "#b5761b", "#7b3fc4", "#17a2b8"];
  const panels = [];
  let timeline = null;

  function groups(names) {
    // left_*/right_* columns make one panel per arm; any other naming (a foreign dataset) one panel.
    const out = new Map();
    names.forEach((name, column) => {
      const side = /^(left|right)_/.exec(name);
      const key = side ? side[1] : "joints";
      if (!out.has(key)) out.set(key, []);
      out.get(key).push(column);
    });
    return out;
  }

  function draw(panel, frame) {
    const { canvas, columns } = panel;
    const width = (canvas.width = canvas.clientWidth * devicePixelRatio);
    const height = (canvas.height = canvas.clientHeight * devicePixelRatio);
    const g = canvas.getContext("2d");
    const n = timeline.state[columns[0]].length;
    const x = (f) => (n > 1 ? (f / (n - 1)) * (width - 1) : 0);
    let lo = Infinity;
    let hi = -Infinity;
    for (const c of columns) for (const v of timeline.state[c].concat(timeline.action[c])) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
    if (!(hi > lo)) { lo -= 1; hi += 1; }
    const y = (v) => height - 4 - ((v - lo) / (hi - lo)) * (height - 8);
    g.fillStyle = "rgba(120, 130, 145, 0.18)";
    for (const [a, b] of timeline.marks.idle) g.fillRect(x(a), 0, Math.max(1, x(b) - x(a)), height);
    const [keepFrom, keepTo] = trimSpan(n);
    g.fillStyle = "rgba(214, 40, 40, 0.12)";  // what the trim leaves out
    if (keepFrom > 0) g.fillRect(0, 0, x(keepFrom), height);
    if (keepTo < n) g.fillRect(x(keepTo), 0, width - x(keepTo), height);
    canvas.dataset.trim = `${keepFrom}:${keepTo}`;
    const ticks = [["safety", "#d62828", 0], ["dropped", "#f08c00", height - 8 * devicePixelRatio]];
    for (const [kind, color, top] of ticks) {
      g.fillStyle = color;
      for (const f of timeline.marks[kind]) g.fillRect(x(f), top, Math.max(1, devicePixelRatio), 8 * devicePixelRatio);
    }
    columns.forEach((c, k) => {
      g.strokeStyle = COLORS[k % COLORS.length];
      g.lineWidth = devicePixelRatio;
      for (const [series, dash] of [[timeline.state[c], []], [timeline.action[c], [4 * devicePixelRatio, 3 * devicePixelRatio]]]) {
        g.setLineDash(dash);
        g.beginPath();
        series.forEach((v, f) => (f ? g.lineTo(x(f), y(v)) : g.moveTo(x(f), y(v))));
        g.stroke();
      }
    });
    g.setLineDash([]);
    g.strokeStyle = "#1d232b";
    g.beginPath();
    g.moveTo(x(frame) + 0.5, 0);
    g.lineTo(x(frame) + 0.5, height);
    g.stroke();
    canvas.dataset.cursor = String(frame);
  }

  function trimSpan(n) {
    // The span the trim form keeps (all of it without a form), frames [from, to).
    const from = parseInt((document.getElementById("trim-start") || {}).value || "0", 10) || 0;
    const to = parseInt((document.getElementById("trim-stop") || {}).value || String(n), 10) || n;
    return [Math.max(0, Math.min(from, n)), Math.max(0, Math.min(to, n))];
  }

  function currentFrame() {
    return parseInt(label.dataset.frame || "0", 10) || 0;
  }

  function redraw() {
    if (timeline) for (const panel of panels) draw(panel, currentFrame());
  }

  function build(data) {
    timeline = data;
    for (const [name, columns] of groups(data.names)) {
      const title = document.createElement("div");
      title.className = "legend";
      title.textContent = `${name}: ` + columns.map((c, k) => `${data.names[c]}`).join(" · ");
      const canvas = document.createElement("canvas");
      canvas.id = `trace-${name}`;
      canvas.dataset.columns = String(columns.length);
      canvas.addEventListener("click", (ev) => {
        const box = canvas.getBoundingClientRect();
        const n = data.state[columns[0]].length;
        const f = Math.round(((ev.clientX - box.left) / box.width) * (n - 1));
        scrubber.value = String(Math.min(n - 1, Math.max(0, f)));
        scrubber.dispatchEvent(new Event("input"));
      });
      holder.append(title, canvas);
      panels.push({ canvas, columns });
    }
    const m = data.marks;
    const parts = [`${m.idle.length} idle span(s)`, `${m.safety.length} frame(s) changed by the safety layer`,
      `${m.dropped.length} frame(s) after lost camera frames`];
    if (data.sidecar.status !== "ok") {
      parts.push(data.sidecar.status === "stale"
        ? `safety and camera marks not shown: ${data.sidecar.reason}`
        : "no timing facts kept for this episode (recorded by another tool): idle spans only");
    }
    status.textContent = parts.join(" · ");
    section.dataset.ready = "1";
    redraw();
  }

  new MutationObserver(redraw).observe(label, { attributes: true, attributeFilter: ["data-frame"] });
  window.addEventListener("resize", redraw);
  window.addEventListener("trimchange", redraw);
  fetch(section.dataset.url, { credentials: "same-origin" })
    .then((r) => (r.ok ? r.json() : Promise.reject(new Error(`${r.status} ${r.statusText}`))))
    .then(build)
    .catch((e) => { status.textContent = `the joint traces could not be loaded: ${e.message}`; });
})();
