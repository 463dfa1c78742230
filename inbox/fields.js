// fields.js: one form control per field spec, in the order the server
// declared the fields: the label, the description under it, the input the
// field's format calls for, its default, its whole rule in words, and its
// error, checked with the bridge's rules (check.js) as the operator types.
// Every field keeps the room for its error line, and an error that comes
// while a mouse button is down waits for its release: nothing moves under
// the pointer between a press and its release.
"use strict";
const Fields = (function () {
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "text") e.textContent = v; else e.setAttribute(k, v === true ? "" : v);
    }
    for (const k of kids) if (k) e.append(k);
    return e;
  }
  // Raw is a number answer kept as typed: app.js writes its text into the
  // command's JSON as it is, never through a double.
  class Raw { constructor(text) { this.text = text; } toString() { return this.text; } toJSON() { return Number(this.text); } }
  // A default the bus shows redacted (an email at the redacted capture
  // level) is not the server's value: it is never pre-filled.
  const REDACTED = /\[REDACTED:[a-z_-]+\]/;
  function usableDefault(f) {
    if (f.default === undefined || f.default === null || f.secret) return undefined;
    if (typeof f.default === "string" && REDACTED.test(f.default)) return undefined;
    return f.default;
  }
  // A date is typed as text in the one format the hint names; the other
  // formats have inputs of their own.
  const INPUT_TYPE = { email: "email", uri: "url", "date-time": "datetime-local" };
  const PLACEHOLDER = { date: "YYYY-MM-DD" };

  // Layout changes wait while a mouse button is down: the field a press
  // leaves is checked at once, but its error shows after the release, so
  // the click that left it lands where it was aimed; app.js renders the
  // cards the same way (afterPress).
  // A press held longer than HOLD is no click: what waits is shown then.
  const HOLD = 2000;
  let pressed = false, holdTimer = 0;
  const waiting = new Map(); // key -> apply()
  function later(key, apply) {
    if (!pressed) { apply(); return; }
    waiting.set(key, apply);
  }
  function flush() { const all = Array.from(waiting.values()); waiting.clear(); for (const a of all) a(); }
  function release() {
    pressed = false;
    clearTimeout(holdTimer);
    // After the click this release ends has been dispatched.
    setTimeout(() => { if (!pressed) flush(); }, 0);
  }
  document.addEventListener("pointerdown", (e) => {
    if (e.button !== 0) return;
    pressed = true;
    clearTimeout(holdTimer);
    holdTimer = setTimeout(() => { pressed = false; flush(); }, HOLD);
  }, true);
  document.addEventListener("pointerup", release, true);
  document.addEventListener("pointercancel", release, true);
  window.addEventListener("blur", release); // a release outside the window never arrives

  // An RFC 3339 date-time as a datetime-local value in this browser's
  // time zone, and back with the zone's offset.
  const pad = (n) => String(n).padStart(2, "0");
  function toLocalInput(s) {
    const d = new Date(s);
    if (typeof s !== "string" || isNaN(d)) return "";
    return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + "T" + pad(d.getHours()) + ":" + pad(d.getMinutes()) + ":" + pad(d.getSeconds());
  }
  function fromLocalInput(v) {
    const withSeconds = v.length === 16 ? v + ":00" : v;
    const d = new Date(withSeconds);
    if (isNaN(d)) return v;
    const off = -d.getTimezoneOffset();
    const zone = off === 0 ? "Z" : (off > 0 ? "+" : "-") + pad(Math.floor(Math.abs(off) / 60)) + ":" + pad(Math.abs(off) % 60);
    return withSeconds + zone;
  }

  // hintNode renders the rule's items (check.js hints) as text, with each
  // token (a pattern, a date format) in a code element that never breaks.
  function hintNode(id, items) {
    if (!items.length) return null;
    const node = el("div", { class: "hint", id: id + "-hint" });
    items.forEach((segs, i) => {
      if (i) node.append(" · ");
      for (const s of segs) node.append(typeof s === "string" ? s : el("code", { class: "token", text: s.code }));
    });
    return node;
  }

  // control returns {id, node, check(how), focus(), refuse(msg)} for field
  // f of question qid. check returns {given, value} or {error: the
  // bridge's message}; how is "typing" (an empty field is not an error
  // yet), "leave" or "submit". refuse shows the bridge's refusal at the
  // field until the operator changes it.
  function control(qid, f, i) {
    const id = "f-" + qid + "-" + i;
    const errEl = el("div", { class: "err", id: id + "-err", "aria-live": "polite" });
    const req = f.required ? el("span", { class: "req", text: " (required)" }) : null;
    const desc = f.description ? el("div", { class: "desc", id: id + "-desc", text: f.description }) : null;
    const items = Check.hints(f);
    if (f.secret) items.push(["secret: never shown on the bus or in logs"]);
    if (f.default !== undefined && usableDefault(f) === undefined && !f.secret) items.push(["the server's default is hidden by redaction"]);
    const hint = hintNode(id, items);
    const described = [desc && id + "-desc", hint && id + "-hint", id + "-err"].filter(Boolean).join(" ");
    let node, read, first, touched = false;
    if (f.type === "boolean") {
      const box = el("input", { type: "checkbox", id, "aria-describedby": described });
      const d = usableDefault(f);
      box.checked = d === true;
      node = el("div", { class: "field" }, el("label", { class: "choice", for: id }, box, document.createTextNode(f.label), req), desc, hint, errEl);
      // An optional box nobody touched and the server gave no default
      // for is left out of the answer, not sent as false.
      read = () => (touched || f.required || typeof d === "boolean" ? { given: true, value: box.checked } : { given: false });
      first = box;
    } else if (f.type === "select") {
      ({ node, read, first } = selectControl(f, id, req, desc, hint, errEl, described, () => touched));
    } else {
      const secret = !!f.secret;
      const type = secret ? "password" : (f.type === "number" ? "text" : INPUT_TYPE[f.format] || "text");
      const negOK = f.min === undefined || String(f.min).startsWith("-");
      const inp = el("input", { type, id, "aria-describedby": described, "aria-required": f.required ? "true" : null,
        inputmode: f.type === "number" ? (negOK || !f.integer ? "text" : "numeric") : null, step: type === "datetime-local" ? "1" : null,
        placeholder: PLACEHOLDER[f.format] || null, autocomplete: secret ? "new-password" : "off", spellcheck: "false" });
      const d = usableDefault(f);
      if (d !== undefined) inp.value = type === "datetime-local" ? toLocalInput(d) : String(d);
      node = el("div", { class: "field" }, el("label", { class: "name", for: id }, document.createTextNode(f.label), req), desc, inp, hint, errEl);
      read = () => {
        const raw = inp.value;
        if (raw === "") return { given: false };
        if (f.type === "number") return { given: true, value: new Raw(raw.trim()), text: raw.trim() };
        return { given: true, value: type === "datetime-local" ? fromLocalInput(raw) : raw };
      };
      first = inp;
    }
    let refused = false; // the bridge's refusal is shown until the field changes
    const setErr = (msg) => later(node, () => {
      errEl.textContent = msg || "";
      node.classList.toggle("invalid", !!msg);
      for (const c of node.querySelectorAll("input, select")) if (msg) c.setAttribute("aria-invalid", "true"); else c.removeAttribute("aria-invalid");
    });
    const check = (how) => {
      const r = read();
      const v = r.value instanceof Raw ? r.text : r.value;
      const err = Check.value(f, v, r.given);
      if (!err || (how === "typing" && err.rule === "required")) {
        if (!refused) setErr("");
        return err ? { error: Check.message(f.id, err) } : r;
      }
      refused = false;
      setErr(err.rule + ": " + err.reason);
      return { error: Check.message(f.id, err) };
    };
    // Checked as the operator types, and when they leave a field they
    // typed in (a required field left empty says so then).
    node.addEventListener("input", () => { touched = true; refused = false; check("typing"); });
    node.addEventListener("change", () => { touched = true; refused = false; check("leave"); });
    node.addEventListener("focusout", () => { if (touched) check("leave"); });
    const refuse = (msg) => { refused = true; setErr(msg); };
    return { id: f.id, node, check, refuse, focus: () => first.focus() };
  }

  function selectControl(f, id, req, desc, hint, errEl, described, touched) {
    const choices = f.choices || [];
    const multi = !!f.multi;
    const d = usableDefault(f);
    const dflt = multi ? (Array.isArray(d) ? d : []) : [d];
    if (multi || choices.length <= 5) {
      const fs = el("fieldset", { "aria-describedby": described }, el("legend", {}, document.createTextNode(f.label), req));
      const boxes = choices.map((c, j) => {
        const b = el("input", { type: multi ? "checkbox" : "radio", name: id, id: id + "-" + j, value: c.id });
        b.checked = dflt.includes(c.id);
        fs.append(el("label", { class: "choice", for: id + "-" + j }, b, document.createTextNode(c.label)));
        return b;
      });
      const node = el("div", { class: "field" }, fs, desc, hint, errEl);
      const read = () => {
        const picked = boxes.filter((b) => b.checked).map((b) => b.value);
        // None picked is an answer once the operator unchecked a box or
        // the server gave a default; otherwise the field is left out.
        if (multi) return picked.length || f.required || touched() || Array.isArray(d) ? { given: true, value: picked } : { given: false };
        return picked.length ? { given: true, value: picked[0] } : { given: false };
      };
      return { node, read, first: boxes[0] };
    }
    const sel = el("select", { id, "aria-describedby": described },
      el("option", { value: "", text: "— choose —" }), ...choices.map((c) => el("option", { value: c.id, text: c.label })));
    if (dflt[0] !== undefined) sel.value = dflt[0];
    const node = el("div", { class: "field" }, el("label", { class: "name", for: id }, document.createTextNode(f.label), req), desc, sel, hint, errEl);
    return { node, read: () => (sel.value ? { given: true, value: sel.value } : { given: false }), first: sel };
  }

  return { control, Raw, afterPress: later };
})();
