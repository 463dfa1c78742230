// fields.js: one form control per field spec, in the order the server
// declared the fields: the label, the description under it, the input the
// field's format calls for, its default, its constraints in words, and its
// error, checked with the bridge's rules (check.js) as the operator goes.
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
  const INPUT_TYPE = { email: "email", uri: "url", date: "date", "date-time": "datetime-local" };

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

  // control returns {id, node, check(), focus()} for field f of question
  // qid; check() returns {given, value} or {error: the bridge's message}.
  function control(qid, f, i) {
    const id = "f-" + qid + "-" + i;
    const errEl = el("div", { class: "err", id: id + "-err", "aria-live": "polite" });
    const req = f.required ? el("span", { class: "req", text: " (required)" }) : null;
    const desc = f.description ? el("div", { class: "desc", id: id + "-desc", text: f.description }) : null;
    const notes = [Check.hints(f)];
    if (f.secret) notes.push("secret: never shown on the bus or in logs");
    if (f.default !== undefined && usableDefault(f) === undefined && !f.secret) notes.push("the server's default is hidden by redaction");
    const hintText = notes.filter(Boolean).join(" · ");
    const hint = hintText ? el("div", { class: "hint", id: id + "-hint", text: hintText }) : null;
    const described = [desc && id + "-desc", hint && id + "-hint", id + "-err"].filter(Boolean).join(" ");
    let node, read, first;
    if (f.type === "boolean") {
      const box = el("input", { type: "checkbox", id, "aria-describedby": described });
      box.checked = usableDefault(f) === true;
      node = el("div", { class: "field" }, el("label", { class: "choice", for: id }, box, document.createTextNode(f.label), req), desc, hint, errEl);
      read = () => ({ given: true, value: box.checked });
      first = box;
    } else if (f.type === "select") {
      ({ node, read, first } = selectControl(f, id, req, desc, hint, errEl, described));
    } else {
      const secret = !!f.secret;
      const type = secret ? "password" : (f.type === "number" ? "text" : INPUT_TYPE[f.format] || "text");
      const negOK = f.min === undefined || String(f.min).startsWith("-");
      const inp = el("input", { type, id, "aria-describedby": described, "aria-required": f.required ? "true" : null,
        inputmode: f.type === "number" ? (negOK ? "text" : "decimal") : null, step: type === "datetime-local" ? "1" : null,
        autocomplete: secret ? "new-password" : "off", spellcheck: "false" });
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
    const setErr = (msg) => {
      errEl.textContent = msg || "";
      node.classList.toggle("invalid", !!msg);
      for (const c of node.querySelectorAll("input, select")) if (msg) c.setAttribute("aria-invalid", "true"); else c.removeAttribute("aria-invalid");
    };
    const check = () => {
      const r = read();
      const v = r.value instanceof Raw ? r.text : r.value;
      const err = Check.value(f, v, r.given);
      if (!err) { setErr(""); return r; }
      setErr(err.rule + ": " + err.reason);
      return { error: Check.message(f.id, err) };
    };
    // Checked as the operator goes: when they leave a field, and as they
    // type once it shows an error.
    node.addEventListener("change", check);
    node.addEventListener("input", () => { if (errEl.textContent) check(); });
    return { id: f.id, node, check, focus: () => first.focus() };
  }

  function selectControl(f, id, req, desc, hint, errEl, described) {
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
        if (multi) return picked.length || f.required ? { given: true, value: picked } : { given: false };
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

  return { control, Raw };
})();
