// The learner's dashboard: the caller's runs with their learning curves, live (GET /v1/events), starting and
// cancelling runs through the learner's public API with the caller's token, and past comparisons' reports.
import {
  ago, clear, fmt, gauge, h, linePlot, requestJson, saved, short, showState, sparkline, streamEvents,
  takeTokenFromHash, webUrl,
} from "./dashboard.js";

const TOKEN_KEY = "budgetlab.learner.token";
const ACTIVE = new Set(["pending", "queued", "running"]);
// How a run's progress bar looks once it has ended: a run that reached its end (or its budget's) is done.
const ENDED = { finished: "done", budget_exhausted: "done", cancelled: "stopped", interrupted: "stopped",
  failed: "bad", oracle_unavailable: "bad" };
const METRICS = {
  normalized_mse: "test MSE ÷ zero predictor's", test_mse: "test MSE", zero_one: "0-1 error",
};
// A report table's headers and digits for the scores its design shows (the report's own).
const SCORES = { test_mse: ["test MSE", 4], normalized_mse: ["normalized MSE", 4], zero_one: ["0-1 error", 3] };
const $ = (id) => document.getElementById(id);

const state = {
  token: saved.get(TOKEN_KEY),
  runs: [],
  curves: new Map(),
  requests: new Map(),
  rows: new Map(),
  selected: selectedInHash(),
  started: null,
  metric: "normalized_mse",
  // Each listed dataset's task: a regression has no 0-1 error to show.
  tasks: new Map(),
  oracleUrl: null,
  stop: null,
};

function selectedInHash() {
  const match = /^#run=([A-Za-z0-9_-]{1,64})$/.exec(location.hash);
  return match ? match[1] : null;
}

const auth = () => ({ Authorization: `Bearer ${state.token}` });
// Whether the chosen score means something for this run: no 0-1 error for a regression.
const scored = (run) => !(state.metric === "zero_one" && state.tasks.get(run.dataset) === "regression");
const NO_ZERO_ONE = "no 0-1 error: a regression";

async function newCaller() {
  const caller = await requestJson("/v1/callers", { method: "POST" });
  setToken(caller.token);
}

function setToken(token) {
  state.token = token;
  saved.set(TOKEN_KEY, token);
  state.curves.clear();
  state.requests.clear();
  state.rows.clear();
  state.runs = [];
  clear($("runs").tBodies[0]);
  $("caller").textContent = token ? `caller …${token.slice(-6)}` : "";
  $("caller").title = "the runs shown are this token's (the admin token shows everyone's)";
  if (token) connect();
}

function onOracle(oracle) {
  // What the oracle's /readyz says: a banner while its ledger takes no writes (or it is out of reach).
  $("oracle-alert").hidden = oracle.ready;
  if (!oracle.ready) {
    $("oracle-alert-code").textContent = oracle.error;
    $("oracle-alert-detail").textContent = oracle.detail;
  }
}

function connect() {
  if (state.stop) state.stop();
  showState($("conn"), "connecting");
  state.stop = streamEvents("/v1/events", {
    headers: auth(),
    onEvent: (name, data) => {
      if (name === "runs") onRuns(data);
      else if (name === "curve") onCurve(data);
      else if (name === "oracle") onOracle(data);
    },
    onState: (s, detail) => {
      showState($("conn"), s, detail);
      if (s === "refused" && detail && detail.error === "unauthorized") {
        $("runs-hint").textContent = "The learner does not know this token (was its database reset?): a new caller "
          + "token was issued.";
        newCaller();
      }
    },
  });
}

function onRuns(page) {
  state.runs = page.runs;
  renderRuns();
}

function onCurve(event) {
  const curve = state.curves.get(event.run) || [];
  state.curves.set(event.run, event.start === 0 ? event.points : curve.slice(0, event.start).concat(event.points));
  const run = state.runs.find((r) => r.id === event.run);
  if (run) fillRow(state.rows.get(run.id), run);
  if (event.run === state.selected) renderPanel();
}

function budgetUse(run) {
  const budget = run.budget;
  const paid = run.progress_attributes;
  // While a run goes, the bar warns as its budget runs low; once it has ended, it says how it ended.
  const tone = ENDED[run.status] || null;
  if (budget.total !== null && budget.total !== undefined) {
    const last = (state.curves.get(run.id) || []).at(-1) || run.last_point;
    const spent = budget.costs ? (last ? last.cost : 0) : paid;
    return gauge(spent, budget.total, `${fmt(spent)} of ${fmt(budget.total)} spent`, tone);
  }
  if (budget.per_example !== null && budget.per_example !== undefined && run.max_examples) {
    return gauge(paid, budget.per_example * run.max_examples,
      `${fmt(paid)} attributes · ${budget.per_example} per example`, tone);
  }
  return gauge(paid, null, `${fmt(paid)} attributes · no limit`);
}

function renderRuns() {
  const body = $("runs").tBodies[0];
  const seen = new Set();
  for (const run of state.runs) {
    seen.add(run.id);
    let row = state.rows.get(run.id);
    if (!row) {
      row = h("tr", { class: "clickable", "data-run": run.id, onclick: (e) => {
        if (!e.target.closest("button")) select(run.id);
      } }, ...Array.from({ length: 10 }, () => h("td")));
      state.rows.set(run.id, row);
    }
    fillRow(row, run);
    body.append(row); // in the page's order (newest first); moving a row keeps it, and its buttons, alive
  }
  for (const [id, row] of state.rows) {
    if (!seen.has(id)) {
      row.remove();
      state.rows.delete(id);
    }
  }
  $("runs-hint").textContent = state.runs.length ? "Click a run to see its learning curves."
    : "No run yet for this caller token: start one above.";
  $("runs-sub").textContent = runsSummary(state.runs);
  followStarted();
  if (state.selected) renderPanel();
}

// "5 most recent: 3 finished, 2 running" (statuses in alphabetical order)
function runsSummary(runs) {
  const counts = new Map();
  for (const run of runs) counts.set(run.status, (counts.get(run.status) || 0) + 1);
  const parts = [...counts].sort().map(([status, n]) => `${n} ${status.replace("_", " ")}`);
  return `${runs.length} most recent` + (parts.length ? `: ${parts.join(", ")}` : "");
}

// The line under the form follows the run it started until that run ends.
function followStarted() {
  const run = state.started && state.runs.find((r) => r.id === state.started);
  if (!run) return;
  const last = (state.curves.get(run.id) || []).at(-1) || run.last_point;
  const where = `${fmt(run.progress_examples)} of ${fmt(run.max_examples)} examples`;
  $("run-state").textContent = ACTIVE.has(run.status)
    ? `run ${short(run.id, 10)}: ${run.status}, ${where}`
    : `run ${short(run.id, 10)} ${run.status.replace("_", " ")} after ${where}`
      + (last && scored(run) ? `; ${METRICS[state.metric]} ${fmt(last[state.metric])}` : "")
      + (run.message ? ` (${run.message})` : "");
}

function fillRow(row, run) {
  const cells = row.cells;
  const curve = state.curves.get(run.id) || [];
  const last = curve.at(-1) || run.last_point;
  row.dataset.status = run.status;
  row.classList.toggle("selected", run.id === state.selected);
  clear(cells[0], short(run.id, 10));
  cells[0].className = "mono";
  clear(cells[1], run.algorithm);
  clear(cells[2], run.dataset);
  clear(cells[3], String(run.seed));
  cells[3].className = "num";
  clear(cells[4], h("span", { class: `badge ${run.status}`, title: run.message || "" }, run.status.replace("_", " ")));
  const ended = ENDED[run.status] || null;
  const spent = run.status === "budget_exhausted" ? " · budget spent" : "";
  clear(cells[5], gauge(run.progress_examples, run.max_examples,
    `${fmt(run.progress_examples)} of ${fmt(run.max_examples)}${spent}`, ended));
  clear(cells[6], budgetUse(run));
  clear(cells[7], last && scored(run) ? fmt(last[state.metric]) : "—");
  cells[7].className = "num";
  cells[7].title = scored(run) ? "" : NO_ZERO_ONE;
  clear(cells[8], scored(run) ? sparkline(curve.map((p) => p[state.metric])) : "");
  cells[8].className = "curve";
  const active = ACTIVE.has(run.status);
  const button = cells[9].querySelector("button");
  if (active && !button) {
    clear(cells[9], h("button", { type: "button", class: "danger", "data-cancel": run.id,
      onclick: () => cancel(run.id, cells[9].querySelector("button")) }, "Cancel"));
  } else if (!active && button) {
    clear(cells[9]);
  }
}

async function select(id) {
  state.selected = id;
  history.replaceState(null, "", `#run=${id}`);
  for (const [runId, row] of state.rows) row.classList.toggle("selected", runId === id);
  renderPanel();
  if (!state.requests.has(id)) {
    try {
      const info = await requestJson(`/v1/runs/${id}`, { headers: auth() });
      state.requests.set(id, info);
      renderPanel();
    } catch (error) {
      $("runs-hint").textContent = error.message;
    }
  }
}

function paramsText(params) {
  const entries = Object.entries(params || {});
  return entries.length ? entries.map(([k, v]) => `${k}=${v}`).join(", ") : "defaults";
}

function renderPanel() {
  const run = state.runs.find((r) => r.id === state.selected);
  if (!run) return;
  $("run-panel").hidden = false;
  $("run-title").textContent = run.id;
  const info = state.requests.get(run.id);
  if (info && ACTIVE.has(info.status) && !ACTIVE.has(run.status)) {
    // it ended since it was fetched: fetch it again for its result (and the line that says why it stayed near zero)
    state.requests.delete(run.id);
    select(run.id);
    return;
  }
  const request = info && info.request;
  const facts = [
    ["algorithm", request ? `${run.algorithm} (${paramsText(request.params)}`
      + `${request.defaults === "theory" ? "; theorems' constants" : ""})` : run.algorithm],
    ["dataset", request ? `${run.dataset} (${paramsText(request.dataset_params)})` : run.dataset],
    ["budget", `${run.budget.per_example ?? "all"} attributes per example`
      + (run.budget.total !== null && run.budget.total !== undefined ? `, ${fmt(run.budget.total)} in total` : "")],
    ["seed", run.seed],
    ["status", `${run.status}${run.message ? ` — ${run.message}` : ""}`],
    ...(info && info.result && info.result.diagnosis ? [["near zero", info.result.diagnosis]] : []),
    ["started", ago(run.created_at)],
    ["oracle session", run.session
      ? h("a", { href: `${state.oracleUrl}/#session=${run.session}`, class: "mono" }, run.session) : "—"],
  ];
  clear($("run-facts"), facts.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
  const curve = state.curves.get(run.id) || [];
  const metric = state.metric;
  const label = METRICS[metric];
  const plot = (x, xlabel) => {
    const series = [{ label, points: curve.map((p) => [p[x], p[metric]]) }];
    if (metric !== "zero_one" && curve.length) {
      // The zero predictor, where every learner starts: MSE ÷ zero MSE is 1 by definition.
      const zero = metric === "normalized_mse" ? 1 : curve[0].test_mse / (curve[0].normalized_mse || 1);
      const xs = curve.map((p) => p[x]);
      series.push({ label: "zero predictor", className: "series-5 ref", reference: true,
        points: [[Math.min(...xs), zero], [Math.max(...xs), zero]] });
    }
    return linePlot({ series, xlabel, ylabel: label, logX: x === "attributes" });
  };
  if (!scored(run)) {
    clear($("run-plots"), h("p", { class: "sub" }, `${NO_ZERO_ONE} (${run.dataset}); plot a test MSE instead`));
    return;
  }
  clear($("run-plots"), plot("attributes", "attributes paid"), plot("examples", "examples seen"));
}

async function cancel(id, button) {
  if (button) button.disabled = true;
  try {
    await requestJson(`/v1/runs/${id}`, { method: "DELETE", headers: auth() });
  } catch (error) {
    $("runs-hint").textContent = error.message;
    if (button) button.disabled = false;
  }
}

// "a=1, b=0.5, c=true, d=text" -> {a: 1, b: 0.5, c: true, d: "text"}
function parseParams(text) {
  const out = {};
  for (const part of text.split(",").map((p) => p.trim()).filter(Boolean)) {
    const eq = part.indexOf("=");
    if (eq <= 0) throw new Error(`'${part}' is not name=value`);
    const key = part.slice(0, eq).trim();
    const raw = part.slice(eq + 1).trim();
    out[key] = raw === "true" ? true : raw === "false" ? false
      : raw !== "" && Number.isFinite(Number(raw)) ? Number(raw) : raw;
  }
  return out;
}

const numberOrNull = (id) => ($(id).value.trim() === "" ? null : Number($(id).value));

async function startRun(event) {
  event.preventDefault();
  const runState = $("run-state");
  runState.classList.remove("error");
  try {
    const body = {
      algorithm: $("algorithm").value,
      params: parseParams($("params").value),
      defaults: $("defaults").value,
      dataset: $("dataset").value.trim(),
      dataset_params: parseParams($("dataset-params").value),
      budget: { per_example: numberOrNull("per-example"), total: numberOrNull("total") },
      seed: numberOrNull("seed") ?? 0,
      max_examples: numberOrNull("max-examples"),
      eval_every: numberOrNull("eval-every"),
    };
    $("start").disabled = true;
    const info = await requestJson("/v1/runs", { method: "POST", headers: auth(), body });
    state.started = info.id;
    runState.textContent = `started run ${short(info.id, 10)} (${info.status})`;
    followStarted();
    select(info.id);
  } catch (error) {
    runState.textContent = error.message;
    runState.classList.add("error");
  } finally {
    $("start").disabled = false;
  }
}

async function loadAlgorithms() {
  const list = await requestJson("/v1/algorithms");
  const select = $("algorithm");
  clear(select, list.algorithms.map((a) => h("option", { value: a.id }, `${a.id} · ${a.name}`)));
  const about = () => {
    const a = list.algorithms.find((x) => x.id === select.value);
    $("algorithm-about").textContent = a
      ? `${a.name}: ${a.paper}, ${a.algorithm}; ${a.protocol} protocol, ${a.budget_kind} budget` : "";
  };
  if (list.algorithms.some((a) => a.id === "aerr")) select.value = "aerr";
  select.addEventListener("change", about);
  about();
}

async function loadDatasets() {
  try {
    const list = await requestJson("/v1/dashboard/datasets");
    state.tasks = new Map(list.datasets.map((d) => [d.name, d.task]));
    clear($("datasets"), list.datasets.map((d) => h("option", { value: d.name },
      `${d.task}, d=${d.n_attributes}, ${d.n_train} train`)),
      list.families.map((f) => h("option", { value: f }, "family")));
  } catch (error) {
    $("run-state").textContent = `the oracle's datasets could not be listed: ${error.message}`;
  }
}

// The mean with its 95 % interval, as the report's tables print it (a results.json older than format 3: ± sd).
function statText(stat, digits = 4) {
  if (!stat) return "—";
  if (stat.n > 1 && stat.low != null && stat.high != null) {
    return `${fmt(stat.mean, digits)} [${fmt(stat.low, 3)}, ${fmt(stat.high, 3)}]`;
  }
  return stat.n > 1 ? `${fmt(stat.mean, digits)} ± ${fmt(stat.std, 2)} sd` : fmt(stat.mean, digits);
}

const VERDICT_BADGE = { holds: "compliant", fails: "violation", "no result": "violation" };

function reportBody(detail) {
  const parts = [h("p", { class: "hint" }, "Report: ", h("code", {}, detail.report), ` · mode: ${detail.mode}`
    + (detail.preset ? ` · preset ${detail.preset}` : "") + ` · wall time ${fmt(detail.wall_time, 3)} s`)];
  if (detail.fallback) parts.push(h("p", { class: "fallback" }, h("b", {}, "Fallback: "), detail.fallback));
  if (detail.headline.length) parts.push(h("p", { class: "headline" }, detail.headline.join(" ")));
  if (detail.claim_rows.length) {
    parts.push(h("table", { class: "claims" },
      h("thead", {}, h("tr", {}, ["claim", "source", "design", "paper", "ours", "seeds", "p (Holm)", "verdict"]
        .map((c) => h("th", {}, c)))),
      h("tbody", {}, detail.claim_rows.map((c) => h("tr", {},
        h("td", {}, c.claim), h("td", {}, c.source), h("td", {}, c.design), h("td", {}, c.paper), h("td", {}, c.ours),
        h("td", {}, c.seeds ? String(c.seeds) : "—"), h("td", {}, c.p_value == null ? "—" : fmt(c.p_value, 2)),
        h("td", {}, h("span", { class: `badge ${VERDICT_BADGE[c.verdict] || "pending"}` }, c.verdict)))))));
  } else {
    parts.push(h("p", { class: "hint" }, "This comparison states no claims."));
  }
  for (const design of detail.designs) {
    parts.push(h("h3", {}, design.name), h("p", { class: "hint" },
      `dataset ${design.dataset} (${paramsText(design.dataset_params)}); `
      + `${design.budget.per_example ?? "all"} attributes per example`));
    const scores = design.metrics.filter((m) => m in SCORES);
    parts.push(h("table", { class: "scores" },
      h("thead", {}, h("tr", {}, ["algorithm", "per example", ...scores.map((m) => SCORES[m][0]),
        "attributes paid", "runs ok"].map((c) => h("th", {}, c)))),
      h("tbody", {}, design.algorithms.map((a) => h("tr", {},
        h("td", {}, `${a.label} (${a.id})`), h("td", { class: "num" }, a.per_example ?? "all"),
        scores.map((m) => h("td", { class: "num" }, statText(a.summary[m], SCORES[m][1]))),
        h("td", { class: "num" }, statText(a.summary.attributes, 6)),
        h("td", { class: "num" }, `${a.completed}/${a.runs}`))))));
    const near = design.algorithms.filter((a) => a.diagnosis);
    if (near.length) {
      parts.push(h("ul", { class: "diagnoses" }, near.map((a) => h("li", {}, h("b", {}, a.label), `: ${a.diagnosis}`))));
    }
    parts.push(h("div", { class: "report-plots" }, design.plots.map((url) => h("img", { src: url, alt: url,
      loading: "lazy" }))));
  }
  return parts;
}

async function loadReports() {
  try {
    const list = await requestJson("/v1/dashboard/comparisons");
    $("reports-sub").textContent = `reports in ${list.directory}`;
    if (!list.reports.length) {
      clear($("reports"), h("p", { class: "hint" }, "No comparison report here yet. ",
        h("code", {}, "budgetlab compare CONFIG --out DIR/NAME"),
        " writes report.md, results.json and its plots into DIR/NAME: open its report.md, or start the learner with ",
        h("code", {}, "BUDGETLAB_REPORTS_DIR=DIR"), " to list its reports here."));
      return;
    }
    const open = new Set([...$("reports").querySelectorAll("details[open]")].map((d) => d.dataset.report));
    clear($("reports"), list.reports.map((r) => {
      const body = h("div", {}, "loading…");
      const details = h("details", { "data-report": r.name, open: open.has(r.name) },
        h("summary", {}, h("b", {}, r.title), ` — ${r.name}, written ${ago(r.written_at)}; `
          + `${r.completed}/${r.runs} runs completed; claims: ${r.claims ? `${r.claims_held} of ${r.claims} hold`
            : "none"}`), body);
      const fill = async () => {
        try {
          clear(body, reportBody(await requestJson(`/v1/dashboard/comparisons/${encodeURIComponent(r.name)}`)));
        } catch (error) {
          clear(body, h("p", { class: "error" }, error.message));
        }
      };
      details.addEventListener("toggle", () => details.open && fill());
      if (details.open) fill();
      return details;
    }));
  } catch (error) {
    clear($("reports"), h("p", { class: "error" }, error.message));
  }
}

async function start() {
  $("run-form").addEventListener("submit", startRun);
  $("metric").addEventListener("change", () => {
    state.metric = $("metric").value;
    renderRuns();
    renderPanel();
  });
  $("caller-new").addEventListener("click", () => newCaller());
  $("caller-switch").addEventListener("click", () => {
    $("token-form").hidden = !$("token-form").hidden;
  });
  $("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const token = $("token-input").value.trim();
    $("token-input").value = "";
    $("token-form").hidden = true;
    if (token) setToken(token);
  });
  const config = await requestJson("/v1/dashboard/config").catch(() => ({}));
  state.oracleUrl = webUrl(new URLSearchParams(location.search).get("oracle") || config.oracle_url || "") || "#";
  $("oracle-link").href = `${state.oracleUrl}/`;
  const handed = takeTokenFromHash("token");
  if (handed) setToken(handed);
  else if (state.token) setToken(state.token);
  else await newCaller();
  await Promise.all([loadAlgorithms(), loadDatasets(), loadReports()]);
  setInterval(loadReports, 20000);
}

start();
