// Shared by the oracle's and the learner's dashboards: DOM helpers, an event-stream reader, gauges and plots.
// Plain ES module, no dependencies: the pages work offline and need no build step.

const SVG_NS = "http://www.w3.org/2000/svg";

// h("td", {class: "num", onclick: f}, "text", child...) -> element
export function h(tag, attrs = {}, ...children) {
  return build(document.createElement(tag), attrs, children);
}

export function s(tag, attrs = {}, ...children) {
  return build(document.createElementNS(SVG_NS, tag), attrs, children);
}

function build(node, attrs, children) {
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function clear(node, ...children) {
  node.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));
  return node;
}

// Numbers as people read them: null as a dash, integers with separators, others to `digits` significant digits.
export function fmt(x, digits = 4) {
  if (x === null || x === undefined || Number.isNaN(x)) return "—";
  if (Number.isInteger(x)) return x.toLocaleString("en-US");
  const a = Math.abs(x);
  if (a !== 0 && (a < 1e-3 || a >= 1e6)) return x.toExponential(digits - 1);
  return Number(x.toPrecision(digits)).toString();
}

export function ago(iso) {
  if (!iso) return "—";
  const seconds = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  if (seconds < 60) return `${Math.round(seconds)} s ago`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min ago`;
  if (seconds < 86400) return `${Math.round(seconds / 3600)} h ago`;
  return new Date(iso).toLocaleDateString();
}

// A link target from a setting or the page's query: http(s) only, so that no "javascript:" URL becomes a link.
export function webUrl(text) {
  try {
    const url = new URL(text, location.href);
    return url.protocol === "http:" || url.protocol === "https:" ? url.href.replace(/\/$/, "") : null;
  } catch {
    return null;
  }
}

export function short(id, n = 8) {
  return id ? String(id).slice(0, n) : "—";
}

// Server-sent events read with fetch (so that tokens go in headers): calls onEvent(name, data) for each event,
// onState("live" | "reconnecting" | "refused", detail) as the connection changes, and reconnects with backoff.
// A 4xx answer is final (the page must change what it sends). Returns a function that stops the stream.
export function streamEvents(url, { headers = {}, onEvent, onState = () => {} }) {
  let stopped = false;
  let controller = null;
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

  async function run() {
    let backoff = 250;
    while (!stopped) {
      controller = new AbortController();
      try {
        const response = await fetch(url, {
          headers: { ...headers, Accept: "text/event-stream" }, signal: controller.signal, cache: "no-store",
        });
        if (response.status >= 400 && response.status < 500) {
          onState("refused", await response.json().catch(() => ({ detail: response.statusText })));
          return;
        }
        if (!response.ok) throw new Error(`HTTP ${response.status}`);
        onState("live");
        backoff = 250;
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += value.replace(/\r\n/g, "\n");
          let end;
          while ((end = buffer.indexOf("\n\n")) >= 0) {
            dispatch(buffer.slice(0, end));
            buffer = buffer.slice(end + 2);
          }
        }
      } catch (error) {
        if (stopped) return;
      }
      if (stopped) return;
      onState("reconnecting");
      await sleep(backoff);
      backoff = Math.min(backoff * 2, 5000);
    }
  }

  function dispatch(block) {
    let name = "message";
    const data = [];
    for (const line of block.split("\n")) {
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
      if (field === "event") name = value;
      else if (field === "data") data.push(value);
    }
    if (data.length) onEvent(name, JSON.parse(data.join("\n")));
  }

  run();
  return () => {
    stopped = true;
    if (controller) controller.abort();
  };
}

// The live indicator in a page's header.
export function showState(node, state, detail) {
  const text = { live: "live", reconnecting: "reconnecting…", refused: "refused", connecting: "connecting…" }[state];
  node.className = `conn ${state}`;
  node.textContent = text || state;
  node.title = detail && detail.detail ? String(detail.detail) : "";
}

// A bar: `used` of `limit` filled, the rest is what remains; without a limit, only the caption. Its colour says
// how much is used ("ok", "high" from 80%, "full"), or what `tone` says ("done", "stopped", "bad": a run's
// progress is coloured by how the run ended, never as an error because it reached its end).
export function gauge(used, limit, caption, tone = null) {
  const width = 140;
  const share = limit ? Math.min(1, used / limit) : 0;
  const level = tone || (share >= 1 ? "full" : share >= 0.8 ? "high" : "ok");
  const bar = limit
    ? s("svg", { class: "gauge", width, height: 12, viewBox: `0 0 ${width} 12`, role: "img",
        "aria-label": caption },
        s("rect", { x: 0, y: 0, width, height: 12, rx: 3, class: "gauge-rest" }),
        s("rect", { x: 0, y: 0, width: Math.max(share * width, used > 0 ? 2 : 0), height: 12, rx: 3,
          class: `gauge-used ${level}` }))
    : null;
  return h("div", { class: "gauge-cell" }, bar, h("div", { class: "gauge-caption" }, caption));
}

function niceStep(span, count) {
  const raw = span / Math.max(1, count);
  const power = 10 ** Math.floor(Math.log10(raw));
  const unit = raw / power;
  return (unit < 1.5 ? 1 : unit < 3 ? 2 : unit < 7 ? 5 : 10) * power;
}

function linearTicks(lo, hi, count) {
  const step = niceStep(hi - lo, count);
  const ticks = [];
  for (let t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) ticks.push(Number(t.toPrecision(12)));
  return ticks;
}

function logTicks(lo, hi) {
  const ticks = [];
  for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) {
    const t = 10 ** e;
    if (t >= lo * 0.999 && t <= hi * 1.001) ticks.push(t);
  }
  return ticks.length >= 2 ? ticks : null;
}

function tickText(t) {
  const a = Math.abs(t);
  if (a >= 1e6) return `${Number((t / 1e6).toPrecision(3))}M`;
  if (a >= 1e4) return `${Number((t / 1e3).toPrecision(3))}k`;
  if (a > 0 && a < 1e-3) return t.toExponential(0);
  return fmt(t, 3);
}

// A line plot of one or more series [{label, points: [[x, y], ...], className, reference}], drawn in SVG
// (a reference series is a dashed line without markers).
export function linePlot({ series, xlabel, ylabel, width = 460, height = 250, logX = false }) {
  // The legend sits above the frame, never over the data.
  const m = { left: 58, right: 14, top: series.length > 1 ? 26 : 12, bottom: 40 };
  const all = series.flatMap((sr) => sr.points).filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y)
    && (!logX || x > 0));
  const root = s("svg", { class: "plot", width, height, viewBox: `0 0 ${width} ${height}`, role: "img",
    "aria-label": `${ylabel} against ${xlabel}`,
    "data-points": series.filter((sr) => !sr.reference).reduce((n, sr) => n + sr.points.length, 0) });
  const pw = width - m.left - m.right;
  const ph = height - m.top - m.bottom;
  root.append(s("rect", { x: m.left, y: m.top, width: pw, height: ph, class: "plot-frame" }));
  root.append(s("text", { x: m.left + pw / 2, y: height - 6, class: "axis-label", "text-anchor": "middle" }, xlabel));
  root.append(s("text", { x: 13, y: m.top + ph / 2, class: "axis-label", "text-anchor": "middle",
    transform: `rotate(-90 13 ${m.top + ph / 2})` }, ylabel));
  if (!all.length) {
    root.append(s("text", { x: m.left + pw / 2, y: m.top + ph / 2, class: "plot-empty", "text-anchor": "middle" },
      "no evaluation yet"));
    return root;
  }
  let [x0, x1] = [Math.min(...all.map((p) => p[0])), Math.max(...all.map((p) => p[0]))];
  let [y0, y1] = [Math.min(...all.map((p) => p[1])), Math.max(...all.map((p) => p[1]))];
  if (x1 === x0) [x0, x1] = logX ? [x0 / 2, x1 * 2] : [x0 - 1, x1 + 1];
  if (y1 === y0) [y0, y1] = [y0 - 0.5 * (Math.abs(y0) || 1), y1 + 0.5 * (Math.abs(y1) || 1)];
  // Zoomed on the data, so that a slow descent shows; from 0 when the data come near it anyway.
  const pad = (y1 - y0) * 0.08;
  [y0, y1] = [y0 >= 0 && y0 - pad < y1 * 0.25 ? 0 : y0 - pad, y1 + pad];
  const useLog = logX && x0 > 0 && x1 / x0 > 20;
  const sx = useLog
    ? (x) => m.left + ((Math.log10(x) - Math.log10(x0)) / (Math.log10(x1) - Math.log10(x0))) * pw
    : (x) => m.left + ((x - x0) / (x1 - x0)) * pw;
  const sy = (y) => m.top + ph - ((y - y0) / (y1 - y0)) * ph;
  const xTicks = (useLog && logTicks(x0, x1)) || linearTicks(x0, x1, 5);
  for (const t of xTicks) {
    root.append(s("line", { x1: sx(t), x2: sx(t), y1: m.top, y2: m.top + ph, class: "grid" }));
    root.append(s("text", { x: sx(t), y: m.top + ph + 15, class: "tick", "text-anchor": "middle" }, tickText(t)));
  }
  for (const t of linearTicks(y0, y1, 4)) {
    root.append(s("line", { x1: m.left, x2: m.left + pw, y1: sy(t), y2: sy(t), class: "grid" }));
    root.append(s("text", { x: m.left - 6, y: sy(t) + 4, class: "tick", "text-anchor": "end" }, tickText(t)));
  }
  series.forEach((sr, i) => {
    const pts = sr.points.filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y) && (!useLog || x > 0));
    if (!pts.length) return;
    const cls = sr.className || `series-${i % 6}`;
    root.append(s("polyline", { points: pts.map(([x, y]) => `${sx(x).toFixed(1)},${sy(y).toFixed(1)}`).join(" "),
      class: `line ${cls}` }));
    for (const [x, y] of sr.reference ? [] : pts) {
      root.append(s("circle", { cx: sx(x).toFixed(1), cy: sy(y).toFixed(1), r: 2.6, class: `dot ${cls}` },
        s("title", {}, `${xlabel} ${fmt(x)}: ${ylabel} ${fmt(y)}`)));
    }
  });
  if (series.length > 1) {
    let x = m.left;
    series.forEach((sr, i) => {
      const cls = sr.className || `series-${i % 6}`;
      root.append(s("line", { x1: x, x2: x + 16, y1: 12, y2: 12, class: `line ${cls}` }));
      root.append(s("text", { x: x + 20, y: 16, class: "legend" }, sr.label));
      x += 34 + 6.5 * sr.label.length;
    });
  }
  return root;
}

// A small curve without axes, for a table cell.
export function sparkline(values, { width = 110, height = 26 } = {}) {
  const ys = values.filter(Number.isFinite);
  const root = s("svg", { class: "sparkline", width, height, viewBox: `0 0 ${width} ${height}`,
    "data-points": ys.length });
  if (ys.length < 1) return root;
  const lo = Math.min(...ys);
  const hi = Math.max(...ys);
  const x = (i) => (ys.length === 1 ? width / 2 : 2 + (i / (ys.length - 1)) * (width - 4));
  const y = (v) => height - 3 - ((v - lo) / (hi - lo || 1)) * (height - 6);
  root.append(s("polyline", { points: ys.map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(" "),
    class: "line series-0" }));
  root.append(s("circle", { cx: x(ys.length - 1), cy: y(ys[ys.length - 1]), r: 2.2, class: "dot series-0" }));
  return root;
}

// A token handed to the page in its URL's fragment (`#name=TOKEN`, as `budgetlab sandbox` prints the pages'
// links): read once and dropped from the address bar and the history entry. A fragment never reaches the server.
export function takeTokenFromHash(name) {
  const match = new RegExp(`^#${name}=([A-Za-z0-9._~+/-]{1,512})$`).exec(location.hash);
  if (!match) return null;
  history.replaceState(null, "", location.pathname + location.search);
  return match[1];
}

// Small persistent settings of a page (localStorage; sessionStorage for what should not outlive the tab).
export const saved = {
  get(key, fallback = null, where = localStorage) {
    try {
      const text = where.getItem(key);
      return text === null ? fallback : JSON.parse(text);
    } catch {
      return fallback;
    }
  },
  set(key, value, where = localStorage) {
    if (value === null || value === undefined) where.removeItem(key);
    else where.setItem(key, JSON.stringify(value));
  },
};

// A JSON request; a refusal's {"error", "detail"} becomes an Error with that text.
export async function requestJson(url, { method = "GET", headers = {}, body } = {}) {
  const response = await fetch(url, {
    method, cache: "no-store",
    headers: { ...headers, ...(body === undefined ? {} : { "Content-Type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = await response.json().catch(() => ({}));
  if (!response.ok) {
    const detail = Array.isArray(data.detail)
      ? data.detail.map((d) => `${(d.loc || []).join(".")}: ${d.msg}`).join("; ")
      : data.detail || response.statusText;
    throw Object.assign(new Error(`${data.error || response.status}: ${detail}`), { status: response.status, data });
  }
  return data;
}
