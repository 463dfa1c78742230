// app.js: the inbox. It subscribes to attention.* and control.* over
// /socket, keeps every open question, shows one page of them as cards, and
// answers with control.attention.respond. It counts the open questions in
// the header and the tab title, and hands each question that opens after
// it has caught up to notify.js. Server text is only ever inserted as
// text, never as markup (AEP-0002 §8).
"use strict";
(function () {
  const PAGE = 20;             // cards per page: 10,000 open questions stay responsive
  const VOTE = "x.aep-mcp-bridge.permission.vote"; // an approval that counted, of a permission request that needs more
  const HISTORY_PAGE = 20;     // settled questions shown before "Show older"
  let wanted = null;           // the question a link names (#question=ID), shown when it arrives
  let token = takeToken();
  const questions = new Map(); // attention request id -> question
  let open = [];               // ids of open questions, in the order they were asked
  const settled = [];          // ids of settled questions, newest first
  const commands = new Map();  // command id -> question id
  const seen = new Set();      // source + id, for dedupe (AEP-0001 §7)
  const positions = new Map(); // session -> {session, epoch, seq}
  const clients = new Map();   // session -> its MCP client, from session.started: {name, version} or null
  const clientEls = new Map(); // session -> the elements that name its client
  let ws = null, backoff = 1000, page = 0, historyShown = HISTORY_PAGE, renderTimer = 0;
  // me is who the bridge authenticated this page as (its hello says): a
  // named operator, with its servers and whether it may answer, or the
  // token's holder. everUp is set once a connection said hello; ended once
  // the bridge closed it because this page's access ended.
  let me = null, everUp = false, ended = false;
  // What was open, or held for replay, when the page first connected is no
  // news: the subscribed frame counts that backlog (open questions, then
  // replayed events), and the events after it are. A backlog after a
  // reconnection holds what opened while the page was away: news.
  let backlog = 0, caughtUp = false;
  // snapshot gathers, after a reconnection, the open questions the
  // subscribed frame says follow: what the page holds open and the bridge
  // does not was settled while the page was away (reconcileOpen).
  let snapshot = null;

  // The token arrives in the link's fragment. It is taken out of the
  // address bar and the history at once, and kept for this tab only, so a
  // reload still connects and nothing else (a bookmark, the history, a
  // shared screen) keeps it. The fragment may name a question too (the
  // link of a webhook notification): it is shown when it arrives.
  function takeToken() {
    const KEY = "aep-mcp-bridge-inbox-token"; // TOKEN_KEY
    const params = new URLSearchParams(location.hash.slice(1));
    const fromLink = params.get("token");
    wanted = params.get("question");
    if (location.hash) history.replaceState(null, "", location.pathname + location.search);
    try {
      if (fromLink) sessionStorage.setItem(KEY, fromLink);
      return fromLink || sessionStorage.getItem(KEY);
    } catch (e) {
      return fromLink; // no storage: this page view only
    }
  }

  // A link that names a question (#question=ID, from a notification or a
  // webhook) opened in a new tab has no token: each tab keeps its own, and
  // the link never carries one. Such a tab asks the inbox tabs already
  // open in this browser for theirs over a BroadcastChannel, which only
  // pages of this same origin share; failing that, it asks the operator
  // to paste the token or credential (signIn), as any tab without a token
  // does. The token never enters an address.
  const TOKEN_KEY = "aep-mcp-bridge-inbox-token";
  const channel = typeof BroadcastChannel === "function" ? new BroadcastChannel("aep-mcp-bridge-inbox") : null;
  let asked = false; // this tab asked for the token (it opened on a question's link)
  if (channel) channel.onmessage = (m) => {
    const d = m.data || {};
    if (d.type === "token?" && token) channel.postMessage({ type: "token", token });
    if (d.type === "token" && !token && asked && typeof d.token === "string" && d.token) { adopt(d.token); }
  };
  function adopt(t) {
    token = t;
    try { sessionStorage.setItem(TOKEN_KEY, t); } catch (e) { /* this page view only */ }
    const f = document.getElementById("signin");
    if (f) f.remove();
    if (ws) ws.close(); else connect();
  }
  // signIn asks for the token (or a named operator's credential) in a
  // password field, when neither the link nor another tab gave one.
  function signIn() {
    if (token || document.getElementById("signin")) return;
    const input = el("input", { type: "password", id: "signin-token", autocomplete: "off", required: true });
    const form = el("form", { id: "signin", class: "card" },
      el("p", { text: "This tab has no token. Paste the inbox token (the part after #token= in the link `aep-mcp-bridge inbox` prints) or your operator credential. It stays in this tab only." }),
      el("div", { class: "field" }, el("label", { for: "signin-token", text: "Token or credential" }), input),
      el("div", { class: "actions" }, el("button", { type: "submit", class: "primary", text: "Open the inbox" })));
    form.addEventListener("submit", (e) => { e.preventDefault(); if (input.value.trim()) adopt(input.value.trim()); });
    $("notice").after(form);
    input.focus();
  }

  const $ = (id) => document.getElementById(id);
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "text") e.textContent = v; else e.setAttribute(k, v === true ? "" : v);
    }
    for (const k of kids) if (k) e.append(k);
    return e;
  }
  function status(text, cls) { const s = $("status"); s.textContent = text; s.className = cls || ""; if (cls === "stopped") s.dataset.was = "stopped"; }

  // ULIDs for command ids (time-sortable, 26 Crockford base32 characters).
  const B32 = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
  function ulid() {
    let t = Date.now(), s = "";
    for (let i = 0; i < 10; i++) { s = B32[t % 32] + s; t = Math.floor(t / 32); }
    const r = crypto.getRandomValues(new Uint8Array(16));
    for (let i = 0; i < 16; i++) s += B32[r[i] % 32];
    return s;
  }
  function ago(ms) {
    const s = Math.max(0, Math.round(ms / 1000));
    if (s < 60) return s + "s";
    if (s < 3600) return Math.floor(s / 60) + "m " + (s % 60) + "s";
    return Math.floor(s / 3600) + "h " + Math.floor((s % 3600) / 60) + "m";
  }
  function when(t) { const d = new Date(t); return isNaN(d) ? "" : d.toLocaleString(); }

  // A number answer travels exactly as typed: the JSON text is written
  // with the number's own digits, never through a double.
  const Raw = Fields.Raw;
  function toJSON(v) {
    if (v instanceof Raw) return v.text;
    if (Array.isArray(v)) return "[" + v.map(toJSON).join(",") + "]";
    if (v && typeof v === "object") return "{" + Object.entries(v).map(([k, x]) => JSON.stringify(k) + ":" + toJSON(x)).join(",") + "}";
    return JSON.stringify(v);
  }

  // exact keeps a number a double cannot hold as written (a bound or a
  // default of 9007199254740993), where the browser gives the source text.
  function exact(key, value, context) {
    if (typeof value === "number" && context && typeof context.source === "string" && String(value) !== context.source) return new Raw(context.source);
    return value;
  }

  function connect() {
    if (ended) return;
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    // Without a token the page still connects: a reverse proxy that signs
    // operators in (the bridge's --operator-header) may vouch for it.
    ws = new WebSocket(proto + "//" + location.host + "/socket" + (token ? "?access_token=" + encodeURIComponent(token) : ""));
    ws.onopen = () => ws.send(JSON.stringify({ type: "hello", versions: ["0.1"], role: "consumer", identity: { agent: "inbox", instance: "browser" } }));
    ws.onmessage = (m) => { let f; try { f = JSON.parse(m.data, exact); } catch (e) { return; } onFrame(f); };
    ws.onclose = () => {
      ws = null;
      if (ended) return;
      if (!token && !everUp) {
        status("no token", "down");
        notice("Open this page with the link `aep-mcp-bridge inbox` prints, or the one your operator credential came with: it carries the token after #token=, which this tab then keeps.");
        signIn();
        return;
      }
      status("reconnecting…", "down");
      probe();
      setTimeout(connect, backoff);
      backoff = Math.min(backoff * 2, 10000);
    };
  }

  // principal reads who the bridge's hello says this page is.
  function principal(f) {
    const exp = f.capabilities && f.capabilities.experimental;
    const p = exp && exp["aep-mcp-bridge-principal"];
    if (!p || typeof p.name !== "string") return null;
    return { name: p.name, answer: p.answer !== false, servers: Array.isArray(p.servers) ? p.servers.filter((x) => typeof x === "string") : ["*"] };
  }

  // showWho names this page's operator in the header, with what it may do
  // and for which servers; a page opened with the shared token (the single
  // user's) shows nothing more than before.
  function showWho() {
    const w = $("who");
    if (!me || me.name === "token holder") { w.hidden = true; return; }
    const servers = me.servers.join(", ") === "*" ? "every server" : me.servers.join(", ");
    w.textContent = me.name + " · " + (me.answer ? "answers " : "reads ") + servers;
    w.hidden = false;
  }

  // probe tells a bridge that stopped from a connection that dropped:
  // when nothing answers at this address any more, the badge says so
  // instead of "reconnecting…" forever. The page still reconnects when a
  // bridge serves the address again.
  function probe() {
    fetch("/healthz", { cache: "no-store" }).then(() => {}, () => {
      if (ws && ws.readyState === 1) return;
      status("bridge stopped", "stopped");
      notice("The bridge at " + location.host + " has stopped: nothing answers there, and the questions below can no longer be answered. This page reconnects when a bridge serves this address again.");
    });
  }

  function notice(text) { const n = $("notice"); n.hidden = !text; n.textContent = text || ""; }

  function onFrame(f) {
    if (!f || typeof f.type !== "string") return;
    if (f.type === "hello") {
      backoff = 1000;
      everUp = true;
      me = principal(f);
      showWho();
      status("connected", "up");
      if ($("status").dataset.was === "stopped") notice("");
      $("status").dataset.was = "";
      // Resume by position after a drop; replay everything held the first time.
      const from = positions.size ? Array.from(positions.values()) : "all";
      ws.send(JSON.stringify({ type: "subscribe", id: "inbox", filter: { type: ["attention.*", "control.*", "session.started", VOTE] }, from }));
      return;
    }
    if (f.type === "error") { onError(f); return; }
    if (f.type === "closing" && typeof f.reason === "string" && /access (revoked|expired)/.test(f.reason)) {
      // The bridge ended this page's access: reconnecting would be refused.
      ended = true;
      status("signed out", "stopped");
      notice("This inbox's access has ended (" + f.reason + "). Ask for a new credential and open its link; the questions below can no longer be answered from this page.");
      return;
    }
    if (f.type === "subscribed") {
      backlog = count(f.open) + count(f.replay);
      if (!backlog) caughtUp = true;
      // The bridge counts its open questions (its open-questions
      // capability): they come first, and are every question still open.
      if (Number.isSafeInteger(f.open)) {
        snapshot = { left: count(f.open), ids: new Set() };
        if (!snapshot.left) reconcileOpen();
      }
      return;
    }
    if (f.type === "closing" || f.type === "pong") return;
    if (f.type.indexOf(".") > 0) {
      const news = caughtUp;
      if (backlog > 0 && --backlog === 0) caughtUp = true;
      onEvent(f, news);
      if (snapshot && snapshot.left > 0) {
        if (f.type === "attention.requested") snapshot.ids.add(f.source + " " + f.id);
        if (--snapshot.left === 0) reconcileOpen();
      }
    }
  }
  function count(n) { return Number.isSafeInteger(n) && n > 0 ? n : 0; }

  // reconcileOpen settles every question the page holds open that the
  // bridge's snapshot of open questions lacks: it was answered, timed out
  // or withdrawn while the page was away, and the replay no longer held
  // its end. It moves to the history as such.
  function reconcileOpen() {
    const still = snapshot ? snapshot.ids : new Set();
    snapshot = null;
    const gone = open.filter((id) => { const q = questions.get(id); return !still.has(q.ev.source + " " + q.id); });
    if (!gone.length) return;
    const now = new Date().toISOString();
    for (const id of gone) {
      const q = questions.get(id);
      q.state = "away";
      q.endTime = now;
      settled.unshift(id);
      Notify.settled(id);
    }
    open = open.filter((id) => questions.get(id).state === "pending");
    schedule();
  }

  function onError(f) {
    const qid = f.cause && commands.get(f.cause);
    if (qid && questions.has(qid)) { showAck(questions.get(qid), "rejected", (f.code || "error") + (f.detail ? ": " + f.detail : "")); return; }
    notice("The endpoint refused a request: " + (f.code || "") + " " + (f.detail || ""));
  }

  // onEvent takes one event; news says it is not part of what the page
  // found when it first connected.
  function onEvent(ev, news) {
    if (ev.session && typeof ev.seq === "number") {
      const p = positions.get(ev.session), epoch = ev.epoch || 0;
      if (!p || epoch > p.epoch || (epoch === p.epoch && ev.seq > p.seq)) positions.set(ev.session, { session: ev.session, epoch, seq: ev.seq });
    }
    const key = ev.source + " " + ev.id;
    if (seen.has(key)) return;
    seen.add(key);
    const d = ev.data || {};
    switch (ev.type) {
      case "session.started":
        if (typeof ev.session === "string") setClient(ev.session, d.client && typeof d.client.name === "string" ? d.client : null);
        break;
      case "attention.requested":
        if (questions.has(ev.id)) return;
        markIntegers(d, ev.aepmcpbridgeint);
        questions.set(ev.id, { id: ev.id, ev, data: d, state: "pending", card: null });
        open.push(ev.id);
        schedule();
        if (news) Notify.question({ id: ev.id, server: ev.subject, kind: d.kind, prompt: d.prompt });
        if (ev.id === wanted) { wanted = null; setTimeout(() => reveal(ev.id), 0); }
        break;
      case VOTE: {
        const q = questions.get(ev.subject);
        if (!q || q.state !== "pending" || !Array.isArray(d.approved)) return;
        q.approved = d.approved.filter((x) => typeof x === "string");
        showApprovals(q);
        break;
      }
      case "attention.answered": {
        const q = questions.get(ev.subject);
        if (q) q.answered = { by: d.by, via: d.via, answer: d.answer || {}, time: ev.time, capture: ev.capture };
        if (q && q.state === "away") { q.hcard = null; schedule(); } // its end arrived after all
        break;
      }
      case "attention.resolved": case "attention.timeout": {
        const q = questions.get(ev.subject);
        if (!q || q.state !== "pending") return;
        q.state = ev.type === "attention.timeout" ? "timeout" : (d.resolution || "resolved");
        q.endTime = ev.time;
        open = open.filter((id) => id !== q.id);
        settled.unshift(q.id);
        Notify.settled(q.id);
        schedule();
        break;
      }
      case "control.accepted": case "control.rejected": {
        const qid = commands.get(ev.cause);
        if (!qid || !questions.has(qid)) return;
        const q = questions.get(qid);
        if (ev.type === "control.accepted") { showAck(q, "accepted", "accepted"); break; }
        showAck(q, "rejected", "rejected (" + (d.reason || "?") + ")" + (typeof d.detail === "string" ? ": " + d.detail : ""));
        refuseAtField(q, d.detail);
        break;
      }
    }
  }

  // markIntegers marks the form's integer fields, which the envelope names
  // (the bridge's aepmcpbridgeint attribute: a JSON string holding an
  // array of field ids); the field specs themselves never say.
  function markIntegers(d, raw) {
    let ids = [];
    try { ids = typeof raw === "string" ? JSON.parse(raw) : []; } catch (e) { ids = []; }
    const named = new Set(Array.isArray(ids) ? ids.filter((x) => typeof x === "string") : []);
    for (const f of Array.isArray(d.fields) ? d.fields : []) if (f && typeof f === "object") f.integer = named.has(f.id);
  }

  // refuseAtField shows the bridge's refusal under the field its detail
  // names ("field \"replicas\": type: must be an integer") and moves the
  // focus there; the fields keep what was typed.
  function refuseAtField(q, detail) {
    const m = /^field ("(?:[^"\\]|\\.)*"): ([\s\S]+)$/.exec(typeof detail === "string" ? detail : "");
    const id = m && Check.goUnquote(m[1]);
    const input = id !== null && id !== undefined && (q.inputs || []).find((r) => r.id === id);
    if (!input) return;
    input.refuse(m[2]);
    input.focus();
  }

  // setClient records a session's MCP client and names it on the cards
  // of the session's questions.
  function setClient(session, client) {
    clients.set(session, client);
    for (const e of clientEls.get(session) || []) e.textContent = clientText(session);
  }
  function clientText(session) {
    if (!clients.has(session)) return "MCP client: unknown";
    const c = clients.get(session);
    if (!c) return "MCP client: unnamed (it sent no clientInfo)";
    return "MCP client: " + c.name + (typeof c.version === "string" && c.version ? " " + c.version : "");
  }
  function clientSpan(session) {
    const e = el("span", { class: "client", text: clientText(session) });
    if (!clientEls.has(session)) clientEls.set(session, []);
    clientEls.get(session).push(e);
    return e;
  }

  function showAck(q, cls, text) {
    if (!q.ackEl) return;
    q.ackEl.className = "ack " + cls;
    q.ackEl.textContent = text;
  }

  // Rendering is batched: a burst of events (a 10,000-question snapshot)
  // costs one render of one page.
  // A render waits for a mouse button to be released: cards that come
  // and go never move the page between a press and its release.
  // The tab title does not wait: it follows every change at once, as it
  // is where an operator sees the count from another tab. The header's
  // count, a live region read aloud, changes with the render.
  function schedule() {
    const title = (open.length ? "(" + open.length.toLocaleString("en") + ") " : "") + "aep-mcp-bridge inbox";
    if (document.title !== title) document.title = title;
    if (!renderTimer) renderTimer = setTimeout(() => Fields.afterPress(render, render), 30);
  }

  function render() {
    renderTimer = 0;
    const n = open.length;
    $("count").textContent = n === 1 ? "1 open question" : n.toLocaleString("en") + " open questions";
    const pages = Math.max(1, Math.ceil(n / PAGE));
    page = Math.min(page, pages - 1);
    const pend = $("pending"), hadFocus = pend.contains(document.activeElement);
    if (!n) pend.replaceChildren(el("p", { class: "empty", text: "No open questions." }));
    else {
      const ids = open.slice(page * PAGE, page * PAGE + PAGE);
      reconcile(pend, ids.map((id) => { const q = questions.get(id); if (!q.card) q.card = card(q); return q.card; }));
    }
    renderPager(n, pages);
    if (hadFocus && !pend.contains(document.activeElement)) focusFirst();
    renderHistory();
    tick();
  }

  // reconcile makes parent's children the given nodes without detaching
  // any node that stays, so a field being typed in keeps its focus while
  // other questions come and go.
  function reconcile(parent, nodes) {
    const keep = new Set(nodes);
    for (const c of Array.from(parent.children)) if (!keep.has(c)) c.remove();
    nodes.forEach((n, i) => { if (parent.children[i] !== n) parent.insertBefore(n, parent.children[i] || null); });
  }

  function renderPager(n, pages) {
    const pager = $("pager");
    pager.hidden = n <= PAGE;
    $("page-info").textContent = n ? "Questions " + (page * PAGE + 1).toLocaleString("en") + "–" + Math.min(n, (page + 1) * PAGE).toLocaleString("en") + " of " + n.toLocaleString("en") : "";
    $("prev").disabled = page === 0;
    $("next").disabled = page >= pages - 1;
  }

  // focusFirst moves the keyboard to the first control of the first card,
  // so answering question after question needs no mouse.
  function focusFirst() {
    const c = $("pending").querySelector("input, select, button");
    if (c) c.focus(); else $("pending-h").focus();
  }

  function renderHistory() {
    const hist = $("history");
    if (!settled.length) { hist.replaceChildren(el("p", { class: "empty", text: "Nothing answered yet." })); return; }
    const shown = settled.slice(0, historyShown).map((id) => questions.get(id)).map((q) => q.hcard || (q.hcard = historyCard(q)));
    if (settled.length > historyShown) {
      const more = el("button", { type: "button", text: "Show older (" + (settled.length - historyShown).toLocaleString("en") + " more)" });
      more.addEventListener("click", () => { historyShown += HISTORY_PAGE; renderHistory(); });
      shown.push(more);
    }
    hist.replaceChildren(...shown);
  }

  function header(q) {
    const ev = q.ev;
    return [
      el("h3", { text: ev.subject || "an MCP server" }),
      el("div", { class: "meta" },
        clientSpan(ev.session),
        el("span", { text: "via " + ev.agent }),
        el("span", { text: "session " + ev.session }),
        el("span", { class: "age", "data-time": ev.time }),
        q.data.expires_at ? el("span", { class: "countdown", "data-expires": q.data.expires_at }) : null),
      el("blockquote", { class: "untrusted" }, el("span", { class: "untrusted-label", text: q.data.kind === "permission" ? "The held tool call (its arguments are untrusted)" : "The server asks (untrusted text)" }), document.createTextNode(q.data.prompt || "")),
    ];
  }

  function card(q) {
    const c = el("article", { class: "card", "data-qid": q.id, "aria-label": "Question from " + (q.ev.subject || "an MCP server") }, ...header(q));
    const via = q.data.respond_via;
    if (Array.isArray(via) && via.indexOf("control") < 0) {
      c.append(el("p", { class: "info", text: "This question is answered in the MCP client; it is shown here for information." }));
      return c;
    }
    if (me && !me.answer) {
      c.append(el("p", { class: "info readonly", text: "You may read this question, not answer it: " + me.name + "'s right is read." }));
      return c;
    }
    if (q.data.kind === "permission") {
      c.append(...permissionControls(q));
      return c;
    }
    if (q.data.kind === "auth" || (!(q.data.fields || []).length && Array.isArray(q.data.options) && q.data.options.length)) {
      c.append(...optionControls(q));
      return c;
    }
    c.append(formFor(q));
    return c;
  }

  function formFor(q) {
    const form = el("form", { novalidate: true });
    const inputs = (q.data.fields || []).map((f, i) => Fields.control(q.id, f, i));
    q.inputs = inputs;
    for (const r of inputs) form.append(r.node);
    const ack = el("p", { class: "ack", role: "status", "aria-live": "polite" });
    q.ackEl = ack;
    const decline = el("button", { type: "button", text: "Decline" });
    const cancel = el("button", { type: "button", text: "Cancel" });
    form.append(el("div", { class: "actions" }, el("button", { type: "submit", class: "primary", text: "Submit" }), decline, cancel), ack);
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const values = {};
      let first = null;
      for (const r of inputs) {
        const res = r.check("submit");
        if (res.error && !first) first = { r, msg: res.error };
        else if (!res.error && res.given) values[r.id] = res.value;
      }
      if (first) {
        q.ackEl.className = "ack rejected local";
        q.ackEl.textContent = first.msg;
        first.r.focus();
        return;
      }
      send(q, { values });
    });
    decline.addEventListener("click", () => send(q, { option: "decline" }));
    cancel.addEventListener("click", () => send(q, { option: "cancel" }));
    return form;
  }

  // optionControls renders a question answered by choosing an option. A
  // URL question (kind "auth") shows its full URL as text with the domain;
  // only an http(s) URL becomes a link, which the operator opens themselves.
  function optionControls(q) {
    const out = [];
    if (q.data.kind === "auth") out.push(...urlBlock(q));
    const ack = el("p", { class: "ack", role: "status", "aria-live": "polite" });
    q.ackEl = ack;
    const buttons = (q.data.options || []).map((o, i) => {
      const b = el("button", { type: "button", class: i === 0 ? "primary" : null, text: o.label });
      b.addEventListener("click", () => send(q, { option: o.id }));
      return b;
    });
    out.push(el("div", { class: "actions" }, ...buttons), ack);
    return out;
  }

  // A permission request is a tool call an approval policy holds. Its card
  // shows the call (the tool, the server, the client, the rule, and the
  // arguments as far as the capture level lets them onto the bus), how
  // many approvers have allowed out of how many the rule needs, and the
  // verdicts the rule offers, Deny with a reason the model reads. The
  // bridge counts each operator once and refuses one who is no approver.
  const VERDICTS = { allow: "Allow", "allow-session": "Allow for this session", deny: "Deny" };
  function permissionControls(q) {
    const ev = q.ev, ctx = q.data.context && typeof q.data.context === "object" ? q.data.context : {};
    const str = (v) => (typeof v === "string" && v ? v : "");
    const need = Number.isSafeInteger(ev.aepmcpbridgeneed) && ev.aepmcpbridgeneed > 0 ? ev.aepmcpbridgeneed : 1;
    q.need = need;
    q.approved = q.approved || [];
    let args = "shown in the request above, as the capture level allows";
    if (ctx.arguments && typeof ctx.arguments === "object") args = JSON.stringify(ctx.arguments, null, 1);
    const rows = [
      ["Tool", str(ev.aepmcpbridgetool) || "unknown"],
      ["Server", str(ev.subject) || "unknown"],
      ["Client", str(ev.aepmcpbridgeclient) || "no authenticated name"],
      ["Policy rule", str(ev.aepmcpbridgerule) || "the policy's default"],
      ["Arguments", args],
    ];
    const facts = el("dl", { class: "values permission" }, ...rows.flatMap(([k, v]) => [el("dt", { text: k }), el("dd", {}, k === "Arguments" && ctx.arguments ? el("pre", { text: v }) : document.createTextNode(v))]));
    q.approvalsEl = el("p", { class: "approvals", role: "status", "aria-live": "polite" });
    showApprovals(q);
    const reasonId = "reason-" + q.id;
    const reason = el("input", { type: "text", id: reasonId, maxlength: "2000", autocomplete: "off" });
    const ack = el("p", { class: "ack", role: "status", "aria-live": "polite" });
    q.ackEl = ack;
    const offered = (q.data.options || []).map((o) => o && o.id).filter((id) => Object.prototype.hasOwnProperty.call(VERDICTS, id));
    const buttons = offered.map((id) => {
      const b = el("button", { type: "button", class: id === "allow" ? "primary" : (id === "deny" ? "deny" : null), "data-verdict": id, text: VERDICTS[id] });
      b.addEventListener("click", () => {
        const answer = { option: id };
        if (id === "deny" && reason.value.trim()) answer.text = reason.value.trim();
        send(q, answer);
      });
      return b;
    });
    return [facts, q.approvalsEl,
      el("div", { class: "field" }, el("label", { for: reasonId, text: "Reason, if you deny (the model reads it)" }), reason),
      el("div", { class: "actions" }, ...buttons), ack];
  }

  function showApprovals(q) {
    if (!q.approvalsEl) return;
    const n = q.approved.length;
    q.approvalsEl.textContent = n + " of " + q.need + (q.need === 1 ? " approval" : " approvals") + (n ? ": " + q.approved.join(", ") : "");
  }

  function urlBlock(q) {
    const m = /(?:^|\n)URL: (\S+)\s*$/.exec(q.data.prompt || "");
    if (!m) return [el("p", { class: "info", text: "The link is not shown at this capture level; ask the operator of the bridge to raise --capture-attention." })];
    let u = null;
    try { u = new URL(m[1]); } catch (e) { u = null; }
    const full = el("p", { class: "url" }, el("span", { class: "url-label", text: "Full address: " }), el("code", { text: m[1] }));
    if (!u || (u.protocol !== "https:" && u.protocol !== "http:") || !u.host) {
      const scheme = u ? u.protocol : "not a URL";
      return [el("p", { class: "domain danger" }, document.createTextNode((q.ev.subject || "The server") + " gives an address that is not a web page (" + scheme + "). Do not open it.")), full];
    }
    return [
      el("p", { class: "domain" }, document.createTextNode((q.ev.subject || "The server") + " asks you to open a page on "), el("strong", { text: u.host })),
      full,
      el("p", {}, el("a", { href: u.href, target: "_blank", rel: "noopener noreferrer", text: "Open the page on " + u.host })),
    ];
  }

  function send(q, answer) {
    if (!ws || ws.readyState !== 1) { showAck(q, "rejected", "not connected; try again in a moment"); return; }
    const id = ulid();
    commands.set(id, q.id);
    const cmd = { aep: "0.1", id, type: "control.attention.respond", subject: q.id, cause: q.id, time: new Date().toISOString(),
      source: "aep://" + location.host + "/agent/inbox", agent: "inbox", session: q.ev.session, capture: "full", data: { answer } };
    q.ackEl.className = "ack"; q.ackEl.textContent = "sending…";
    ws.send(toJSON(cmd));
  }

  // historyCard says how a question ended: the outcome, who answered and
  // through what, and when.
  function historyCard(q) {
    const a = q.answered;
    let outcome, who = "", how = "";
    if (a) {
      const ans = a.answer || {};
      const option = typeof ans.option === "string" ? ans.option : "";
      outcome = option ? { accept: "Accepted", decline: "Declined", cancel: "Cancelled", allow: "Allowed",
        "allow-session": "Allowed for this session", deny: "Denied" }[option] || option : "Accepted";
      if (option === "deny" && typeof ans.text === "string" && ans.text) outcome += " (" + ans.text + ")";
      const by = typeof a.by === "string" ? a.by : "someone";
      who = by.startsWith("policy:") ? "by the scripted rule " + by.slice(7) : "by " + by;
      how = a.via === "oob" ? "in the MCP client" : (by.startsWith("policy:") ? "automatically" : "through the AEP endpoint");
    } else if (q.state === "timeout") outcome = q.data.kind === "permission" ? "Timed out: nobody decided in time; the rule's on_timeout decided the call" : "Timed out: nobody answered, the server got cancel";
    else if (q.state === "dismissed") outcome = q.data.kind === "permission" ? "Withdrawn: the client cancelled the call, or its session ended" : "Withdrawn: the server cancelled it, or its session ended";
    else if (q.state === "auto") outcome = "Completed by the server";
    else if (q.state === "away") outcome = "Settled while this page was away: the bridge no longer holds it open";
    else if (q.state === "abandoned") outcome = "Abandoned: it expired and its asker went away without timing it out; nobody can answer it";
    else outcome = "Settled (" + q.state + ")";
    const t = (a && a.time) || q.endTime;
    const rows = a ? recordedValues(q, a) : [];
    return el("article", { class: "card", "data-qid": q.id },
      el("div", { class: "meta" }, el("span", { text: q.ev.subject || "" }), clientSpan(q.ev.session), el("span", { text: "asked " + when(q.ev.time) })),
      el("p", { class: "outcome" }, el("strong", { text: outcome }), document.createTextNode(who ? " " + who : ""),
        document.createTextNode(how ? " " + how : ""), el("time", { datetime: t || "", text: t ? " at " + when(t) : "" })),
      rows.length ? el("dl", { class: "values" }, ...rows.flatMap(([label, value, why]) =>
        [el("dt", { text: label }), el("dd", {}, document.createTextNode(value), why ? el("span", { class: "why", text: why }) : null)])) : null,
      el("blockquote", { class: "untrusted" }, el("span", { class: "untrusted-label", text: "The server asked" }), document.createTextNode(q.data.prompt || "")));
  }

  // Why a recorded value is not what was typed, by the redaction marker in
  // it (AEP-0003 §9.4).
  const REDACTION = {
    secret: "a secret field's value, or a credential in the text, is never recorded; the server received it as typed",
    pii: "the bridge records free text at the redacted capture level, which removes email addresses and phone numbers; the server received it as typed",
  };
  const MARKER = /\[REDACTED:([a-z_-]+)\]/;

  // recordedValues lists an answer's values as [label, value, why] rows,
  // under the fields' labels in the form's order, choices by their labels.
  function recordedValues(q, a) {
    const values = a.answer && a.answer.values && typeof a.answer.values === "object" ? a.answer.values : {};
    const fields = Array.isArray(q.data.fields) ? q.data.fields : [];
    const known = new Set(fields.map((f) => f.id));
    const rows = [];
    const low = a.capture === "metadata" || a.capture === "none";
    for (const f of fields) {
      if (Object.prototype.hasOwnProperty.call(values, f.id)) rows.push(valueRow(f, values[f.id]));
      else if (low && f.type === "string" && !f.secret) rows.push([String(f.label), "not recorded", "free text is left out at the " + a.capture + " capture level"]);
    }
    for (const [k, v] of Object.entries(values)) if (!known.has(k)) rows.push(valueRow({ id: k, label: k }, v));
    return rows;
  }

  function valueRow(f, v) {
    const label = String(f.label === undefined ? f.id : f.label);
    const choice = (id) => { const c = (f.choices || []).find((c) => c.id === id); return c ? String(c.label) : String(id); };
    let text;
    if (v instanceof Fields.Raw) text = v.text;
    else if (typeof v === "boolean") text = v ? "yes" : "no";
    else if (f.type === "select" && Array.isArray(v)) text = v.length ? v.map(choice).join(", ") : "none";
    else if (f.type === "select" && typeof v === "string") text = choice(v);
    else if (typeof v === "string") text = v;
    else text = JSON.stringify(v);
    const m = typeof v === "string" ? MARKER.exec(v) : null;
    let why = m ? REDACTION[m[1]] || "the bridge's redaction (" + m[1] + ") replaced part of this text before it reached the bus; the server received it as typed" : "";
    if (m && f.secret) why = REDACTION.secret;
    return [label, text, why];
  }

  // A question more than this past its expires_at belongs to an asker that
  // went away without timing it out (bus.ExpiredGrace): nobody can answer
  // it any more, and the hub no longer holds it open.
  const EXPIRED_GRACE = 60 * 1000;

  function dropAbandoned(now) {
    const gone = open.filter((id) => {
      const e = Date.parse(questions.get(id).data.expires_at || "");
      return e && now - e > EXPIRED_GRACE;
    });
    if (!gone.length) return;
    for (const id of gone) {
      const q = questions.get(id);
      q.state = "abandoned";
      q.endTime = q.data.expires_at;
      settled.unshift(id);
      Notify.settled(id);
    }
    open = open.filter((id) => questions.get(id).state === "pending");
    schedule();
  }

  function tick() {
    const now = Date.now();
    dropAbandoned(now);
    for (const s of document.querySelectorAll(".age")) s.textContent = "asked " + ago(now - Date.parse(s.dataset.time)) + " ago";
    for (const s of document.querySelectorAll(".countdown")) {
      const left = Date.parse(s.dataset.expires) - now;
      s.textContent = left > 0 ? "expires in " + ago(left) : "expired";
    }
  }

  // reveal brings the operator to a question, from its notification or a
  // link: to the page of cards that holds it, or to its card in the
  // history once it is settled, with the focus on its first control.
  function reveal(id) {
    const q = questions.get(id);
    if (!q) return;
    let c;
    if (q.state === "pending") {
      page = Math.floor(open.indexOf(id) / PAGE);
      render();
      c = q.card;
    } else {
      historyShown = Math.max(historyShown, settled.indexOf(id) + 1);
      render();
      c = q.hcard;
    }
    if (!c) return;
    c.scrollIntoView({ block: "start" });
    // A permission request's first control is its first verdict (Allow),
    // not the reason beside Deny.
    const first = c.querySelector("button[data-verdict]") || c.querySelector("input, select, textarea, button, a[href]");
    if (first) { first.focus(); return; }
    c.tabIndex = -1;
    c.focus();
  }
  Notify.start({ isOpen: (id) => { const q = questions.get(id); return !!q && q.state === "pending"; }, reveal });

  $("prev").addEventListener("click", () => { page = Math.max(0, page - 1); render(); focusFirst(); });
  $("next").addEventListener("click", () => { page += 1; render(); focusFirst(); });
  setInterval(tick, 1000);
  if (!token && channel && wanted) {
    // A question's link: ask the open inbox tabs first; connect anyway
    // soon after, as a page behind a signing-in proxy needs no token. A
    // bare address (a bookmark) is not given the token this way.
    status("asking the open inbox tabs for the token…", "down");
    asked = true;
    channel.postMessage({ type: "token?" });
    setTimeout(() => { if (!ws && !token) connect(); }, 700);
  } else connect();
})();
