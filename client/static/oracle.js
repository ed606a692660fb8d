// The oracle's dashboard: its sessions, and the tail of one session's ledger, live (GET /v1/events).
// Values are shown only for the sessions whose tokens the user adds; the admin token lists every session without
// values, and the accounts with their allowances (a teacher's view of a class). Session tokens stay in this browser (localStorage), the admin token only for this tab (sessionStorage).
import {
  ago, clear, fmt, gauge, h, requestJson, saved, short, showState, streamEvents, takeTokenFromHash, webUrl,
} from "./dashboard.js";

const ADMIN_KEY = "budgetlab.oracle.admin";
const HELD_KEY = "budgetlab.oracle.sessions";
const SHOWN_ROWS = 200;
const $ = (id) => document.getElementById(id);

const state = {
  admin: saved.get(ADMIN_KEY, null, sessionStorage),
  held: saved.get(HELD_KEY, {}),
  follow: followedInHash(),
  account: null, // the account whose sessions the admin lists (null: every session)
  accounts: {}, // the admin's accounts by id
  view: null,
  ledger: { session: null, values: false, rows: [] },
  stop: null,
};

function followedInHash() {
  const match = /^#session=([A-Za-z0-9_-]{1,64})$/.exec(location.hash);
  return match ? match[1] : null;
}

function connect() {
  if (state.stop) state.stop();
  const headers = {};
  if (state.admin) headers.Authorization = `Bearer ${state.admin}`;
  const pairs = Object.entries(state.held).map(([id, token]) => `${id}:${token}`);
  if (pairs.length) headers["X-Session-Tokens"] = pairs.join(",");
  const query = new URLSearchParams();
  if (state.follow) query.set("follow", state.follow);
  if (state.account) query.set("account", state.account);
  const url = "/v1/events" + (query.size ? `?${query}` : "");
  showState($("conn"), "connecting");
  if (!state.view) {
    // The first list audits every session's chain: seconds on a ledger of 100,000s of rows.
    $("sessions-hint").textContent = "Loading the sessions and their audits…";
  }
  state.stop = streamEvents(url, {
    headers,
    onEvent: (name, data) => (name === "sessions" ? renderSessions(data) : name === "ledger" ? renderLedger(data)
      : name === "error" ? ($("sessions-hint").textContent = data.detail) : null),
    onState: (s, detail) => {
      showState($("conn"), s, detail);
      if (s === "refused") refused(detail);
    },
  });
  renderAccess();
}

function refused(body) {
  // The stream was refused: the admin token is wrong (401/403) or the session tokens are malformed (422).
  if (body && ["unauthorized", "forbidden", "admin_disabled"].includes(body.error) && state.admin) {
    setAdmin(null);
    $("admin-state").textContent = body.detail;
    $("admin-state").classList.add("error");
  } else if (body && body.error === "invalid_request") {
    state.held = {};
    saved.set(HELD_KEY, null);
    $("held-state").textContent = body.detail;
    connect();
  }
}

function setAdmin(token) {
  state.admin = token;
  saved.set(ADMIN_KEY, token, sessionStorage);
  connect();
}

function renderAccess() {
  $("admin-signin").hidden = !!state.admin;
  $("admin-token").hidden = !!state.admin;
  $("admin-signout").hidden = !state.admin;
  if (state.admin) {
    $("admin-state").textContent = "signed in as the admin";
    $("admin-state").classList.remove("error");
  }
}

function budgetText(budget) {
  const parts = [];
  if (budget.per_example !== null && budget.per_example !== undefined) parts.push(`${budget.per_example} per example`);
  if (budget.total !== null && budget.total !== undefined) parts.push(`${fmt(budget.total)} in total`);
  if (budget.label_cost) parts.push(`labels cost ${fmt(budget.label_cost)}`);
  if (budget.costs) parts.push("priced attributes");
  return parts.length ? parts.join("; ") : "unlimited";
}

function paramsText(params) {
  const entries = Object.entries(params || {});
  return entries.length ? entries.map(([k, v]) => `${k}=${v}`).join(", ") : "";
}

function auditCell(verdict) {
  if (!verdict) return "—";
  if (verdict.compliant === true) {
    return h("span", { class: "badge compliant", title: `${fmt(verdict.rows)} rows checked` }, "compliant");
  }
  if (verdict.compliant === false) {
    return h("span", { class: "badge violation", title: verdict.reasons.join("; ") }, "violation");
  }
  return h("span", { class: "badge", title: verdict.detail }, "not audited");
}

function limitText(value, unit = "") {
  return value === null || value === undefined ? "no limit" : `${fmt(value)}${unit}`;
}

function allowanceText(allowance) {
  const parts = [allowance.per_example === null ? "any k" : `k ≤ ${allowance.per_example}`];
  parts.push(allowance.datasets === null ? "every dataset" : allowance.datasets.join(", ") || "no dataset");
  if (!allowance.splits.includes("test")) parts.push("test shielded");
  return parts.join(" · ");
}

function renderAccounts(view) {
  state.accounts = Object.fromEntries(view.accounts.map((a) => [a.id, a]));
  $("accounts-panel").hidden = !view.admin;
  if (!view.admin) return;
  const rows = view.accounts.map((account) => {
    const a = account.allowance;
    const spent = account.spent;
    const cost = a.total === null
      ? `${fmt(spent.cost)} spent · no limit`
      : `${fmt(spent.cost)} spent · ${fmt(account.remaining.total)} left of ${fmt(a.total)}`;
    const evaluations = a.evaluations === null
      ? `${fmt(spent.evaluations)} · no limit` : `${fmt(spent.evaluations)} of ${fmt(a.evaluations)}`;
    return h("tr", {
      class: `clickable${account.id === state.account ? " selected" : ""}`, "data-account": account.id,
      onclick: () => listAccount(account.id),
    },
    h("td", {}, h("b", {}, account.name), h("div", { class: "hint mono" }, account.id)),
    h("td", {}, h("span", { class: `badge ${account.status === "active" ? "open" : "closed"}` }, account.status)),
    h("td", {}, allowanceText(a)),
    h("td", {}, gauge(spent.cost, a.total, cost)),
    h("td", {}, gauge(spent.evaluations, a.evaluations, evaluations)),
    h("td", {}, gauge(spent.open, a.sessions, `${fmt(spent.open)} of ${limitText(a.sessions)}`)),
    h("td", { class: "num" }, fmt(spent.sessions)),
    h("td", { title: account.created_at }, ago(account.created_at)));
  });
  clear($("accounts").tBodies[0], rows);
  $("accounts-hint").textContent = view.accounts.length ? ""
    : "No account yet: 'budgetlab accounts create NAME --total ... --per-example ...' makes one, with its API key.";
}

function listAccount(id) {
  state.account = id === state.account ? null : id;
  connect();
}

function renderLedgerState(ledger) {
  // What /readyz says of the ledger: a banner while it takes no writes.
  $("ledger-alert").hidden = !ledger || ledger.ready;
  if (ledger && !ledger.ready) {
    $("ledger-alert-code").textContent = ledger.error;
    $("ledger-alert-detail").textContent = ledger.detail;
  }
}

function renderSessions(view) {
  state.view = view;
  renderLedgerState(view.ledger);
  renderAccounts(view);
  const c = view.counts;
  clear($("counts"),
    [["sessions", c.sessions], ["open", c.open], ["closed", c.closed], ["ledger rows", c.ledger_rows]]
      .map(([label, n]) => h("div", {}, h("b", {}, fmt(n)), h("span", {}, label))));
  const listed = view.account ? (state.accounts[view.account] || { name: view.account }).name : null;
  $("sessions-sub").textContent = !view.admin ? "the sessions you hold tokens for"
    : listed ? `the sessions of the account ${listed}, newest first (admin)`
      + (view.sessions.some((s) => s.account !== view.account) ? ", and those this page holds tokens for" : "")
    : "every session, newest first (admin)";
  $("all-sessions").hidden = !listed;
  for (const [id, detail] of Object.entries(view.unknown)) {
    $("held-state").textContent = `session ${short(id, 12)}: ${detail}`;
    $("held-state").classList.add("error");
    delete state.held[id];
  }
  if (Object.keys(view.unknown).length) {
    saved.set(HELD_KEY, state.held);
    connect();
    return;
  }
  const rows = view.sessions.map((session) => sessionRow(session, view.held[session.id]));
  clear($("sessions").tBodies[0], rows);
  $("sessions-hint").textContent = view.sessions.length
    ? "Click a session to follow its ledger."
    : view.admin ? "No session yet."
      : c.sessions
        ? `${fmt(c.sessions)} session${c.sessions === 1 ? "" : "s"} on this oracle, none held by this page: sign in `
          + "with the admin token to list them (the page links budgetlab sandbox prints sign in by themselves), "
          + "or add a session's id and token above."
        : "Sign in with the admin token to list every session, or add a session's id and token above.";
  if (state.follow) renderFacts(state.follow);
}

function sessionRow(session, held) {
  const spent = session.spent;
  const total = session.budget.total;
  const account = session.account ? state.accounts[session.account] : null;
  const pooled = account && account.allowance.total !== null;
  const caption = total !== null && total !== undefined
    ? `${fmt(spent.cost)} spent · ${fmt(session.remaining.total)} left of ${fmt(total)}`
    : pooled ? `${fmt(spent.cost)} spent · its account's ${fmt(account.remaining.total)} left`
      : `${fmt(spent.cost)} spent · no global limit`;
  return h("tr", {
    class: `clickable${session.id === state.follow ? " selected" : ""}`, "data-session": session.id,
    onclick: () => follow(session.id),
  },
  h("td", { class: "mono", title: session.id }, short(session.id, 12), " ",
    held ? h("span", { class: "tag" }, "values") : null,
    h("div", { class: "hint", "data-account": session.account || "" },
      session.account ? `account ${account ? account.name : short(session.account)}` : "anonymous")),
  h("td", {}, session.dataset, h("div", { class: "hint" }, paramsText(session.dataset_params))),
  h("td", {}, `${session.split} · ${session.protocol}${session.order === "pool" ? " · pool" : ""}`),
  h("td", {}, budgetText(session.budget)),
  h("td", {}, gauge(spent.cost, total, caption)),
  h("td", { class: "num" }, fmt(spent.attributes)),
  h("td", { class: "num" }, `${fmt(spent.examples_issued)} / ${fmt(session.n_examples)}`),
  h("td", {}, h("span", { class: `badge ${session.status}` }, session.status)),
  h("td", { class: "num" }, fmt(session.ledger_rows)),
  h("td", { class: "audit" }, auditCell(session.audit)),
  h("td", { title: session.last_active }, ago(session.last_active)));
}

function follow(id) {
  if (id === state.follow) return;
  state.follow = id;
  history.replaceState(null, "", `#session=${id}`);
  state.ledger = { session: id, values: false, rows: [] };
  for (const tr of $("sessions").tBodies[0].rows) tr.classList.toggle("selected", tr.dataset.session === id);
  connect();
}

function renderFacts(id) {
  const held = state.view && state.view.held[id];
  const facts = held
    ? [["session", id], ["seed", held.seed], ["predictions", fmt(held.predictions)],
      ["cumulative loss", fmt(held.cumulative_loss)], ["chain head", held.head_hash]]
    : [["session", id]];
  clear($("ledger-facts"), facts.flatMap(([k, v]) => [h("dt", {}, k), h("dd", { class: "mono" }, v)]));
}

function renderLedger(event) {
  $("ledger-panel").hidden = false;
  $("ledger-title").textContent = short(event.session, 12);
  renderFacts(event.session);
  if (event.refused) {
    $("ledger-note").textContent = event.refused.detail;
    $("ledger-note").classList.add("error");
    clear($("ledger").tHead);
    clear($("ledger").tBodies[0]);
    return;
  }
  $("ledger-note").classList.remove("error");
  const ledger = state.ledger;
  if (event.first || ledger.session !== event.session) {
    Object.assign(ledger, { session: event.session, values: event.values, rows: [] });
    const head = event.values
      ? ["seq", "kind", "example", "attribute", "value", "cost", "payload"]
      : ["rows", "kind", "count", "cost"];
    clear($("ledger").tHead, h("tr", {}, head.map((name) => h("th", { class: name === "kind" || name === "payload"
      || name === "rows" ? "" : "num" }, name))));
    $("ledger-note").textContent = event.values
      ? "Newest first. Every value this session was sent has its row here."
      : "Values hidden: this page holds no token for this session (add it above to see them). Each line is one "
        + "link of the chain: its kind, how many rows it holds and what it cost.";
  }
  ledger.rows.push(...event.rows);
  if (ledger.rows.length > SHOWN_ROWS) ledger.rows.splice(0, ledger.rows.length - SHOWN_ROWS);
  const lines = [];
  ledger.rows.forEach((row, i) => {
    const before = ledger.rows[i - 1];
    const expected = before ? before.seq + (ledger.values ? 1 : before.n) : row.seq;
    if (row.seq > expected) {
      lines.push(h("tr", { class: "gap" }, h("td", { colspan: 7 }, `… ${fmt(row.seq - expected)} rows not shown`)));
    }
    lines.push(ledger.values ? valueRow(row) : linkRow(row));
  });
  clear($("ledger").tBodies[0], lines.reverse());
}

function valueRow(row) {
  const payload = row.payload && Object.keys(row.payload).length ? JSON.stringify(row.payload) : "";
  return h("tr", { "data-seq": row.seq, "data-kind": row.kind },
    h("td", { class: "num" }, row.seq),
    h("td", {}, row.kind),
    h("td", { class: "num" }, row.example ?? ""),
    h("td", { class: "num" }, row.attribute ?? ""),
    h("td", { class: "num value" }, row.value === null || row.value === undefined ? "" : fmt(row.value, 6)),
    h("td", { class: "num" }, fmt(row.cost)),
    h("td", { class: "mono", title: payload }, payload.length > 70 ? `${payload.slice(0, 70)}…` : payload));
}

function linkRow(link) {
  return h("tr", { "data-seq": link.seq, "data-kind": link.kind },
    h("td", { class: "mono" }, link.n > 1 ? `${link.seq}–${link.seq + link.n - 1}` : String(link.seq)),
    h("td", {}, link.kind),
    h("td", { class: "num" }, fmt(link.n)),
    h("td", { class: "num" }, fmt(link.cost)));
}

async function start() {
  const handed = takeTokenFromHash("admin");
  if (handed) {
    state.admin = handed;
    saved.set(ADMIN_KEY, handed, sessionStorage);
  }
  $("admin-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const token = $("admin-token").value.trim();
    $("admin-token").value = "";
    if (token) setAdmin(token);
  });
  $("admin-signout").addEventListener("click", () => {
    state.account = null;
    setAdmin(null);
    $("admin-state").textContent = "";
  });
  $("all-sessions").addEventListener("click", () => listAccount(state.account));
  $("held-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const id = $("held-id").value.trim();
    const token = $("held-token").value.trim();
    if (!id || !token) return;
    state.held[id] = token;
    saved.set(HELD_KEY, state.held);
    $("held-id").value = $("held-token").value = "";
    $("held-state").textContent = `added session ${short(id, 12)}`;
    $("held-state").classList.remove("error");
    state.follow = null;
    follow(id);
  });
  window.addEventListener("hashchange", () => {
    const id = followedInHash();
    if (id && id !== state.follow) follow(id);
  });
  let learner = new URLSearchParams(location.search).get("learner");
  try {
    const config = await requestJson("/v1/dashboard/config");
    learner = learner || config.learner_url;
    if (!config.admin_enabled) $("admin-state").textContent = "this oracle has no admin token";
  } catch (error) {
    $("sessions-hint").textContent = String(error.message);
  }
  $("learner-link").href = `${webUrl(learner || `${location.protocol}//${location.hostname}:8001`) || "#"}/`;
  connect();
}

start();
