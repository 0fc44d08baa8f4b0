"""The live view's page: the cameras, refreshed, and one small plot per joint (follower solid, leader dashed)."""

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>so101 live view</title>
<style>
 body { font-family: system-ui, sans-serif; margin: 12px; background: #111; color: #ddd; }
 #cameras { display: flex; gap: 8px; flex-wrap: wrap; }
 figure { margin: 0; } figcaption { font-size: 12px; color: #aaa; }
 img { max-width: 32vw; background: #222; }
 #plots { display: grid; grid-template-columns: repeat(6, 1fr); gap: 6px; margin-top: 10px; }
 canvas { width: 100%; height: 90px; background: #1b1b1b; }
 .label { font-size: 11px; color: #aaa; }
</style></head>
<body>
<div id="status" class="label">waiting for the first step...</div>
<div id="cameras"></div>
<div id="plots"></div>
<script>
const REFRESH_MS = __REFRESH_MS__;
const cameras = document.getElementById("cameras"), plots = document.getElementById("plots");
const images = {}, canvases = {};
function camera(name) {
  if (images[name]) return images[name];
  const figure = document.createElement("figure"), img = document.createElement("img");
  img.id = "camera-" + name; img.alt = name;
  const caption = document.createElement("figcaption"); caption.textContent = name;
  figure.append(img, caption); cameras.append(figure); images[name] = img; return img;
}
function plot(name) {
  if (canvases[name]) return canvases[name];
  const box = document.createElement("div"), label = document.createElement("div");
  const canvas = document.createElement("canvas");
  label.className = "label"; label.textContent = name; canvas.width = 240; canvas.height = 90;
  box.append(label, canvas); plots.append(box); canvases[name] = canvas; return canvas;
}
function draw(canvas, series) {
  const g = canvas.getContext("2d"); g.clearRect(0, 0, canvas.width, canvas.height);
  const all = series.flatMap(s => s.points); if (all.length < 2) return;
  const t0 = Math.min(...all.map(p => p[0])), t1 = Math.max(...all.map(p => p[0]));
  let lo = Math.min(...all.map(p => p[1])), hi = Math.max(...all.map(p => p[1]));
  if (hi - lo < 1) { hi += 0.5; lo -= 0.5; }
  for (const s of series) {
    g.strokeStyle = s.color; g.setLineDash(s.dashed ? [4, 3] : []); g.beginPath();
    s.points.forEach((p, i) => {
      const x = (p[0] - t0) / Math.max(t1 - t0, 1e-6) * canvas.width;
      const y = canvas.height - (p[1] - lo) / (hi - lo) * canvas.height;
      i ? g.lineTo(x, y) : g.moveTo(x, y);
    });
    g.stroke();
  }
}
async function refresh() {
  try {
    const state = await (await fetch("state.json", {cache: "no-store"})).json();
    document.getElementById("status").textContent = state.renders + " pictures rendered";
    for (const name of state.cameras) camera(name).src = "frame/" + name + ".jpg?n=" + state.renders;
    for (const side of ["left", "right"]) for (const joint of state.joints) {
      const f = state.traces[side + "_follower." + joint], l = state.traces[side + "_leader." + joint];
      if (!f && !l) continue;
      draw(plot(side + " " + joint),
           [{points: f || [], color: "#4fc3f7"}, {points: l || [], color: "#ffb74d", dashed: true}]);
    }
  } catch (e) { document.getElementById("status").textContent = "the session has ended"; return; }
  setTimeout(refresh, REFRESH_MS);
}
refresh();
</script></body></html>
"""


def page(refresh_fps: float) -> bytes:
    """The page, refreshing at `refresh_fps`."""
    return PAGE.replace("__REFRESH_MS__", str(round(1000 / refresh_fps))).encode()
