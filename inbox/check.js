// check.js: the bridge's answer rules (package translate), for what a
// field spec carries, with the bridge's own wording, so the page says
// before sending what the bridge would say after. Pure functions only.
"use strict";
const Check = (function () {
  // Go's %q for a field id, as InvalidAnswer.Error writes it.
  function goQuote(s) {
    let out = '"';
    for (const ch of s) {
      const c = ch.codePointAt(0);
      if (ch === '"' || ch === "\\") out += "\\" + ch;
      else if (ch === "\n") out += "\\n";
      else if (ch === "\r") out += "\\r";
      else if (ch === "\t") out += "\\t";
      else if (ch === "\x07") out += "\\a";
      else if (ch === "\b") out += "\\b";
      else if (ch === "\f") out += "\\f";
      else if (ch === "\v") out += "\\v";
      else if (c < 0x20 || c === 0x7f) out += "\\x" + c.toString(16).padStart(2, "0");
      else if ((c >= 0x80 && c <= 0x9f) || c === 0xad || (c >= 0x200b && c <= 0x200f) || (c >= 0x2028 && c <= 0x202e) ||
        (c >= 0x2060 && c <= 0x206f) || c === 0xfeff || (c >= 0xfff9 && c <= 0xfffb)) out += "\\u" + c.toString(16).padStart(4, "0");
      else out += ch;
    }
    return out + '"';
  }

  // goUnquote reads a string goQuote wrote (Go's %q), or returns null.
  function goUnquote(q) {
    if (q.length < 2 || q[0] !== '"' || q[q.length - 1] !== '"') return null;
    const ESC = { n: "\n", r: "\r", t: "\t", a: "\x07", b: "\b", f: "\f", v: "\v", '"': '"', "\\": "\\" };
    let out = "";
    for (let i = 1; i < q.length - 1; i++) {
      const c = q[i];
      if (c === '"') return null;
      if (c !== "\\") { out += c; continue; }
      const e = q[++i];
      if (i >= q.length - 1) return null; // the closing quote, escaped
      if (ESC[e] !== undefined) { out += ESC[e]; continue; }
      const n = { x: 2, u: 4, U: 8 }[e];
      const hex = n ? q.slice(i + 1, i + 1 + n) : "";
      if (!n || hex.length !== n || !/^[0-9a-fA-F]+$/.test(hex) || i + n >= q.length - 1) return null;
      const cp = parseInt(hex, 16);
      if (cp > 0x10ffff) return null;
      out += String.fromCodePoint(cp);
      i += n;
    }
    return out;
  }

  // message is InvalidAnswer.Error().
  function message(fieldId, err) { return "field " + goQuote(fieldId) + ": " + err.rule + ": " + err.reason; }

  // Exact numbers (translate/number.go): sign, significant digits as a
  // BigInt and a power of ten; never a double between an answer and a bound.
  const NUM = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$/;
  const TOO_LARGE = "must be a number no larger than 1.7976931348623157e308 in magnitude, the largest a JSON peer can read";
  function parseNumber(s) {
    if (!NUM.test(s)) return { problem: "must be written as a JSON number" };
    const lower = s.toLowerCase();
    const eAt = lower.indexOf("e");
    const mant = eAt < 0 ? lower : lower.slice(0, eAt), exp = eAt < 0 ? "" : lower.slice(eAt + 1);
    const neg = mant.startsWith("-");
    const body = neg ? mant.slice(1) : mant;
    const dot = body.indexOf(".");
    const intPart = dot < 0 ? body : body.slice(0, dot), frac = dot < 0 ? "" : body.slice(dot + 1);
    let digits = (intPart + frac).replace(/^0+/, "");
    const trailing = digits.length - digits.replace(/0+$/, "").length;
    digits = digits.slice(0, digits.length - trailing);
    if (digits.length > 1000) return { problem: "must be a number of at most 1000 significant digits" };
    const f = Number(s);
    if (!Number.isFinite(f)) return { problem: TOO_LARGE };
    if (digits === "") return { text: s, neg: false, digits: 0n, e10: 0 };
    if (f === 0) return { problem: "must be 0 or a number no smaller than 5e-324 in magnitude; smaller numbers read as 0" };
    const e10 = trailing - frac.length + (exp === "" ? 0 : parseInt(exp, 10));
    return { text: s, neg, digits: BigInt(digits), e10 };
  }
  function cmp(a, b) {
    const sa = a.digits === 0n ? 0 : (a.neg ? -1 : 1), sb = b.digits === 0n ? 0 : (b.neg ? -1 : 1);
    if (sa !== sb) return sa < sb ? -1 : 1;
    if (sa === 0) return 0;
    const e = Math.min(a.e10, b.e10);
    const x = a.digits * 10n ** BigInt(a.e10 - e), y = b.digits * 10n ** BigInt(b.e10 - e);
    const m = x === y ? 0 : (x < y ? -1 : 1);
    return sa < 0 ? -m : m;
  }
  // numberString is Number.String(): an integer of up to 30 digits in plain
  // digits, anything else as written.
  function isInt(n) { return n.digits === 0n || n.e10 >= 0; }
  // multipleOf reports whether x is an integer multiple of m (m > 0).
  function multipleOf(x, m) {
    if (m.digits === 0n || x.digits === 0n) return true;
    const e = Math.min(x.e10, m.e10);
    const a = x.digits * 10n ** BigInt(x.e10 - e), b = m.digits * 10n ** BigInt(m.e10 - e);
    return a % b === 0n;
  }
  function numberString(n) {
    if (n.digits === 0n) return "0";
    if (n.e10 >= 0) {
      const t = (n.neg ? "-" : "") + n.digits.toString() + "0".repeat(n.e10);
      if (t.length <= 30) return t;
    }
    return n.text;
  }

  // Formats (translate/format.go): each is ajv-formats' own check, as the
  // bridge ports it, so the page takes exactly what the bridge takes. The
  // patterns spell both cases of each letter range instead of using the i
  // flag, as the bridge's do; without the u flag, JavaScript's case folding
  // would agree anyway.
  const hexDigit = "[0-9a-fA-F]", pctEnc = "%" + hexDigit + "{2}", h16 = hexDigit + "{1,4}";
  const decOctet = String.raw`(?:25[0-5]|2[0-4]\d|[01]?\d\d?)`;
  const ipv4 = String.raw`(?:${decOctet}\.){3}${decOctet}`;
  const subDelims = "!$&'()*+,;=", unreserv = String.raw`a-zA-Z0-9\-._~`;
  const pchar = `(?:[${unreserv}${subDelims}:@]|${pctEnc})`;
  const qchar = `(?:[${unreserv}${subDelims}:@/?]|${pctEnc})`;
  const ipv6 = `(?:(?:(?:${h16}:){6}|::(?:${h16}:){5}|(?:${h16})?::(?:${h16}:){4}|` +
    `(?:(?:${h16}:){0,1}${h16})?::(?:${h16}:){3}|(?:(?:${h16}:){0,2}${h16})?::(?:${h16}:){2}|` +
    `(?:(?:${h16}:){0,3}${h16})?::${h16}:|(?:(?:${h16}:){0,4}${h16})?::)` +
    `(?:${h16}:${h16}|${ipv4})|(?:(?:${h16}:){0,5}${h16})?::${h16}|(?:(?:${h16}:){0,6}${h16})?::)`;
  const ipvFuture = String.raw`[Vv]` + hexDigit + String.raw`+\.[` + unreserv + subDelims + ":]+";
  const regName = `(?:[${unreserv}${subDelims}]|${pctEnc})*`;
  const userinfo = `(?:(?:[${unreserv}${subDelims}:]|${pctEnc})*@)?`;
  const authority = userinfo + String.raw`(?:\[(?:` + ipv6 + "|" + ipvFuture + String.raw`)\]|` + ipv4 + "|" + regName + String.raw`)(?::\d*)?`;
  const URI = new RegExp(String.raw`^(?:[a-zA-Z][a-zA-Z0-9+\-.]*:)` +
    String.raw`(?:\/?\/` + authority + String.raw`(?:\/` + pchar + "*)*" +
    String.raw`|\/(?:` + pchar + String.raw`+(?:\/` + pchar + "*)*)?" +
    "|" + pchar + String.raw`+(?:\/` + pchar + "*)*)" +
    String.raw`(?:\?` + qchar + "*)?(?:#" + qchar + "*)?$");
  const EMAIL = new RegExp("^[a-zA-Z0-9!#$%&'*+/=?^_`{|}~-]+(?:\\.[a-zA-Z0-9!#$%&'*+/=?^_`{|}~-]+)*" +
    String.raw`@(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?\.)+[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?$`);
  const DATE = /^(\d\d\d\d)-(\d\d)-(\d\d)$/;
  const TIME = /^(\d\d):(\d\d):(\d\d(?:\.\d+)?)([zZ]|([+-])(\d\d)(?::?(\d\d))?)?$/;
  const DAYS_IN = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
  // date is RFC 3339 full-date: a real day, year 0000 to 9999.
  function date(s) {
    const m = DATE.exec(s);
    if (!m) return false;
    const year = +m[1], month = +m[2], day = +m[3];
    if (month < 1 || month > 12 || day < 1) return false;
    const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
    return month === 2 && leap ? day <= 29 : day <= DAYS_IN[month];
  }
  // jsSpace is the set translate names: what JavaScript's \s matches.
  function jsSpace(c) {
    return [0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x20, 0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff].includes(c) || (c >= 0x2000 && c <= 0x200a);
  }
  // dateTime is a date, one separator (t, T or a space) and a time with
  // its offset.
  function dateTime(s) {
    const cps = Array.from(s);
    let sep = -1, n = 0;
    cps.forEach((ch, i) => { if (ch === "t" || ch === "T" || jsSpace(ch.codePointAt(0))) { if (n === 0) sep = i; n++; } });
    if (n !== 1) return false;
    return date(cps.slice(0, sep).join("")) && time(cps.slice(sep + 1).join(""));
  }
  // time is RFC 3339 full-time (an offset is required); a leap second is
  // taken only at 23:59 UTC.
  function time(s) {
    const m = TIME.exec(s);
    if (!m || m[4] === undefined) return false;
    const hr = +m[1], mn = +m[2], sec = parseFloat(m[3]);
    if (isNaN(sec)) return false;
    const sign = m[5] === "-" ? -1 : 1;
    const tzH = m[6] !== undefined ? +m[6] : 0, tzM = m[7] !== undefined ? +m[7] : 0;
    if (tzH > 23 || tzM > 59) return false;
    if (hr <= 23 && mn <= 59 && sec < 60) return true;
    const utcMin = mn - tzM * sign;
    let utcHr = hr - tzH * sign;
    if (utcMin < 0) utcHr--;
    return (utcHr === 23 || utcHr === -1) && (utcMin === 59 || utcMin === -1) && sec < 61;
  }
  function validFormat(f, s) {
    switch (f) {
      case "email": return EMAIL.test(s);
      case "uri": return /[/:]/.test(s) && URI.test(s); // ajv-formats: a ":" or "/" somewhere
      case "date": return date(s);
      case "date-time": return dateTime(s);
    }
    return true;
  }
  const NOUN = { email: "email address", uri: "absolute URI", date: "date (YYYY-MM-DD)", "date-time": "RFC 3339 date-time" };
  function compile(pattern) {
    try { return new RegExp(pattern, "u"); } catch (e) { return null; } // the bridge checks what the page cannot
  }

  // value checks one answer for field spec f. given is false when the
  // operator gave nothing. It returns null or {rule, reason}.
  function value(f, v, given) {
    const bad = (rule, reason) => ({ rule, reason });
    if (!given) return f.required ? bad("required", "a value is required") : null;
    switch (f.type) {
      case "string": {
        if (typeof v !== "string") return bad("type", "must be a string");
        const n = Array.from(v).length;
        if (f.minLength !== undefined && n < f.minLength) return bad("minLength", "must be at least " + f.minLength + " characters");
        if (f.maxLength !== undefined && n > f.maxLength) return bad("maxLength", "must be at most " + f.maxLength + " characters");
        if (f.format && !validFormat(f.format, v)) return bad("format", "must be a valid " + (NOUN[f.format] || f.format));
        if (f.pattern) { const re = compile(f.pattern); if (re && !re.test(v)) return bad("pattern", "does not match the required pattern"); }
        return null;
      }
      case "number": {
        const x = parseNumber(String(v));
        if (x.problem) return bad("type", x.problem);
        if (f.integer && !isInt(x)) return bad("type", "must be an integer");
        const bound = (k) => { if (f[k] === undefined) return null; const b = parseNumber(String(f[k])); return b.problem ? null : b; };
        let b;
        if ((b = bound("min")) && cmp(x, b) < 0) return bad("minimum", "must be at least " + numberString(b));
        if ((b = bound("max")) && cmp(x, b) > 0) return bad("maximum", "must be at most " + numberString(b));
        if ((b = bound("exclusiveMinimum")) && cmp(x, b) <= 0) return bad("exclusiveMinimum", "must be greater than " + numberString(b));
        if ((b = bound("exclusiveMaximum")) && cmp(x, b) >= 0) return bad("exclusiveMaximum", "must be less than " + numberString(b));
        if ((b = bound("multipleOf")) && !b.neg && !multipleOf(x, b)) return bad("multipleOf", "must be a multiple of " + numberString(b));
        return null;
      }
      case "select": {
        const ids = new Set((f.choices || []).map((c) => c.id));
        if (!f.multi) return ids.has(v) ? null : bad("enum", "must be one of the listed choices");
        if (v.some((x) => !ids.has(x))) return bad("enum", "every item must be one of the listed choices");
        if (new Set(v).size !== v.length) return bad("uniqueItems", "a choice may be selected only once");
        if (f.minItems !== undefined && v.length < f.minItems) return bad("minItems", "select at least " + f.minItems);
        if (f.maxItems !== undefined && v.length > f.maxItems) return bad("maxItems", "select at most " + f.maxItems);
        return null;
      }
    }
    return null;
  }

  // hints states a field's whole rule in words, for under its input: a
  // list of items, each a list of segments, a segment being text or
  // {code} (a token shown whole: a pattern, a date format).
  function hints(f) {
    const h = [];
    if (f.type === "string") {
      if (f.minLength !== undefined && f.maxLength !== undefined) h.push([f.minLength + " to " + f.maxLength + " characters"]);
      else if (f.minLength !== undefined) h.push(["at least " + f.minLength + " characters"]);
      else if (f.maxLength !== undefined) h.push(["at most " + f.maxLength + " characters"]);
      if (f.format === "date") h.push(["a date, ", { code: "YYYY-MM-DD" }]);
      else if (f.format === "date-time") h.push(["a date and time"]);
      else if (f.format && NOUN[f.format]) h.push(["a valid " + NOUN[f.format]]);
      if (f.pattern) h.push(["matching the pattern ", { code: f.pattern }]);
    } else if (f.type === "number") {
      const bound = (k) => { if (f[k] === undefined) return null; const n = parseNumber(String(f[k])); return n.problem ? String(f[k]) : numberString(n); };
      h.push([f.integer ? "a whole number" : "a number"]);
      const min = bound("min"), max = bound("max"), gt = bound("exclusiveMinimum"), lt = bound("exclusiveMaximum"), step = bound("multipleOf");
      if (min !== null && max !== null) h.push(["from " + min + " to " + max]);
      else if (min !== null) h.push(["at least " + min]);
      else if (max !== null) h.push(["at most " + max]);
      if (gt !== null) h.push(["greater than " + gt]);
      if (lt !== null) h.push(["less than " + lt]);
      if (step !== null) h.push(["a multiple of " + step]);
    } else if (f.type === "select" && f.multi) {
      if (f.minItems !== undefined) h.push(["select at least " + f.minItems]);
      if (f.maxItems !== undefined) h.push(["select at most " + f.maxItems]);
    }
    return h;
  }

  return { value, message, hints, parseNumber, goQuote, goUnquote };
})();
