// notify.js: system notifications for the questions that open while the
// inbox's tab is in the background, and the "Notify me" box that turns
// them on.
//
// The page never asks for the permission by itself: the box asks, once,
// when the operator checks it (browsers require a click), and the browser
// keeps the answer. A refusal leaves the box saying so; unchecking it
// turns notifications off in this browser (localStorage) while the
// permission stays. With the permission already granted, and the box
// never unchecked, notifications are on.
//
// Everything shown comes from the question's event as the bus carries it,
// at its capture level: the server's name and the first line of the
// prompt. Both are hostile: a notification's title and body are plain
// text, and they are cut short and cleaned of control characters and of
// the characters that reorder or hide text. Nothing here builds markup.
"use strict";
const Notify = (function () {
  const KEY = "aep-mcp-bridge-inbox-notify"; // "on" or "off": the operator's choice
  const TAG = "aep-mcp-bridge-inbox:";       // + the question's id: two inbox tabs show one notification
  const BURST = 3;       // more new questions than this at once make one notification
  const GATHER = 250;    // ms during which new questions are gathered
  const TITLE_MAX = 80, BODY_MAX = 180;
  const supported = typeof window.Notification === "function";
  let broken = false;    // the constructor threw: this browser shows notifications from a service worker only
  let asking = false;    // a permission prompt is up
  let choice = stored();
  let fresh = [], timer = 0;
  const shown = new Map(); // tag -> Notification
  let hooks = { isOpen: () => false, reveal: () => {} };

  const box = document.getElementById("notify");
  const ctl = document.getElementById("notify-ctl");
  const label = document.getElementById("notify-label");

  function stored() { try { return localStorage.getItem(KEY); } catch (e) { return null; } }
  function remember(v) {
    choice = v;
    try { localStorage.setItem(KEY, v); } catch (e) { /* no storage: this page view only */ }
  }

  function enabled() { return supported && !broken && Notification.permission === "granted" && choice !== "off"; }

  // paint shows the state in the box: checked when notifications are on,
  // disabled, and saying so, when the browser blocks them.
  function paint() {
    if (!supported) { ctl.hidden = true; return; }
    ctl.hidden = false;
    const blocked = Notification.permission === "denied";
    box.checked = !broken && (asking || enabled());
    box.disabled = blocked || broken;
    label.textContent = broken ? "No notifications in this browser" : blocked ? "Notifications blocked" : "Notify me";
    ctl.title = broken ? "This browser shows notifications only to installed web apps."
      : blocked ? "The browser blocks notifications from this page: allow them in its site settings."
        : "A system notification for each new question while this tab is in the background.";
  }

  function onChange() {
    if (!box.checked) { remember("off"); paint(); return; }
    remember("on");
    if (Notification.permission !== "default") { paint(); return; }
    // The only place the page asks: the operator's click on the box.
    asking = true;
    paint();
    const done = () => { asking = false; paint(); };
    try {
      const p = Notification.requestPermission(done); // the callback for browsers that return no promise
      if (p && typeof p.then === "function") p.then(done, done); else done();
    } catch (e) { done(); }
  }

  // cleanText keeps one line of plain text, at most max characters.
  function cleanText(s, max) {
    s = String(s === undefined || s === null ? "" : s)
      .replace(/[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/g, "") // bidi marks, overrides and isolates
      .replace(/[\p{Cc}\u2028\u2029]+/gu, " ")
      .replace(/\s+/g, " ").trim();
    const chars = Array.from(s);
    return chars.length > max ? chars.slice(0, max - 1).join("") + "…" : s;
  }
  function firstLine(s) {
    for (const l of String(typeof s === "string" ? s : "").split(/\r\n|[\r\n\u2028\u2029]/)) if (l.trim()) return l;
    return "";
  }
  // server names who asks; a name of nothing but invisible characters is
  // no name.
  function server(q) { return cleanText(q.server, TITLE_MAX) || "an MCP server"; }
  function noun(kind) { return kind === "permission" ? "Permission request" : kind === "auth" ? "Sign-in request" : "Question"; }

  // show makes one notification; a click brings the operator to the
  // question (or the first of a burst).
  function show(tag, title, body, target) {
    let n;
    try {
      n = new Notification(title, { body, tag: TAG + tag });
    } catch (e) {
      broken = true; // Chrome on Android: notifications need a service worker
      paint();
      return;
    }
    shown.set(tag, n); // one of the same tag is replaced by the browser; closing it could close this one
    n.onclick = () => {
      window.focus();
      hooks.reveal(target);
      n.close();
    };
    n.onclose = () => { if (shown.get(tag) === n) shown.delete(tag); };
  }

  function flush() {
    timer = 0;
    const list = fresh.filter((q) => hooks.isOpen(q.id));
    fresh = [];
    if (!list.length || !enabled() || document.visibilityState !== "hidden") return;
    if (list.length > BURST) {
      const servers = Array.from(new Set(list.map((q) => server(q))));
      show("burst", list.length.toLocaleString("en") + " new questions", cleanText("From " + servers.join(", "), BODY_MAX), list[0].id);
      return;
    }
    for (const q of list) {
      show(q.id, noun(q.kind) + " from " + server(q), cleanText(firstLine(q.prompt), BODY_MAX), q.id);
    }
  }

  // question is called for each question that opens after the page has
  // caught up with what was open when it connected: {id, server, kind,
  // prompt}, as its event carries them. Nothing is shown while the tab
  // is in front.
  function question(q) {
    if (!enabled() || document.visibilityState !== "hidden") return;
    fresh.push(q);
    if (!timer) timer = setTimeout(flush, GATHER);
  }

  // settled takes away the notification of a question that no longer
  // waits.
  function settled(id) {
    const n = shown.get(id);
    if (n) { shown.delete(id); n.close(); }
  }

  // Back in front, the tab shows every question itself.
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState !== "visible") return;
    for (const n of shown.values()) n.close();
    shown.clear();
  });

  if (supported) {
    box.addEventListener("change", onChange);
    // The permission changed in the browser's settings.
    try {
      navigator.permissions.query({ name: "notifications" }).then((s) => { s.onchange = paint; }, () => {});
    } catch (e) { /* no Permissions API: the state is read on each change of the box */ }
  }
  paint();

  // start connects the page: isOpen(id) says whether a question still
  // waits, reveal(id) brings the operator to it.
  function start(h) { hooks = h; }

  return { start, question, settled };
})();
