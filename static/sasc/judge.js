// The judging page: keyboard answers, active-time measurement, the next task shown at once
// from a preloaded copy, and saves that retry with the same Idempotency-Key until the
// server has answered (a save is never dropped, and never stored twice).
// The edit page (#judge-edit) shares the keys and the checks; its form posts as usual.
(() => {
  "use strict";
  const editing = document.getElementById("judge-edit");
  const root = document.getElementById("judge") || editing;
  if (!root) return;
  const current = document.getElementById("current");
  const preloaded = document.getElementById("preloaded");
  const statusEl = document.getElementById("save-status");
  const errorsEl = document.getElementById("save-errors");
  const csrf = () => (document.cookie.match(/(?:^|; )csrftoken=([^;]+)/) || [])[1] || "";
  const IDLE_MS = 60000;

  // --- active time: counts only while the tab is visible and the annotator did something
  //     in the last minute.
  let lastActivity = Date.now();
  let active = 0;
  let lastTick = Date.now();
  ["keydown", "mousemove", "mousedown", "scroll", "touchstart"].forEach((e) =>
    document.addEventListener(e, () => { lastActivity = Date.now(); }, { passive: true }));
  setInterval(() => {
    const now = Date.now();
    if (document.visibilityState === "visible" && now - lastActivity < IDLE_MS) {
      active += (now - lastTick) / 1000;
    }
    lastTick = now;
  }, 1000);

  const task = () => current.querySelector("section.task");
  const form = () => current.querySelector("form.answers");

  function startTask() {
    forgetAnswers();  // Backspace and y/n/d start afresh on each task
    active = 0;
    lastTick = Date.now();
    lastActivity = Date.now();
    const f = form();
    if (f) {
      // The checks below name the question at fault beside it; the browser's own bubble
      // (kept for pages without scripts) would name only the first.
      f.noValidate = true;
      if (f.elements.started_at) f.elements.started_at.value = new Date().toISOString();
      (f.querySelector("input[type=radio]:checked") || f.querySelector("input[type=radio]"))
        .focus({ preventScroll: true });
    }
    window.scrollTo(0, 0);
  }

  const judged = new Set();  // tasks judged on this page
  let preloading = false;

  function heldIds() {
    const ids = [];
    const t = task();
    if (t) ids.push(t.dataset.taskId);
    const p = preloaded.content.querySelector("section.task");
    if (p) ids.push(p.dataset.taskId);
    return ids;
  }

  function showNext() {
    const next = preloaded.content.querySelector("section.task");
    current.replaceChildren();
    if (next) {
      current.appendChild(document.importNode(next, true));
      preloaded.content.replaceChildren();
      startTask();
      return true;
    }
    // Nothing preloaded yet: wait for the save's answer (or the preload) to bring the next.
    const wait = document.createElement("p");
    wait.className = "loading muted";
    wait.textContent = "Loading the next task…";
    current.appendChild(wait);
    return false;
  }

  let doneHtml = "";  // why no task waits, as the server said last
  // While the server says a task may come by itself (a model choosing documents, a claim
  // that may expire: data-poll on its answer), ask again: after 5 s, then less often, up
  // to once a minute; the first task that comes goes on show and the asking stops.
  // A failed ask (the server restarting, the network down, the session ended) is asked
  // again the same way; one ask is one request, never a redirect followed.
  let pollTimer = null;
  let pollDelay = 0;
  let polling = false;

  function showAllDone() {
    if (task()) return;
    const tpl = document.createElement("template");
    tpl.innerHTML = doneHtml;
    current.replaceChildren(tpl.content);
    if (current.querySelector("[data-poll]")) schedulePoll();
  }

  function schedulePoll() {
    if (pollTimer !== null || polling) return;
    pollDelay = pollDelay ? Math.min(Math.round(pollDelay * 1.5), 60000) : 5000;
    pollTimer = setTimeout(poll, pollDelay);
  }

  async function poll() {
    pollTimer = null;
    if (task()) return;
    polling = true;
    let status = 0;
    try {
      status = await preload();
    } catch (err) {
      status = 0;  // the network: ask again later
    } finally {
      polling = false;
    }
    const failed = status === 0 || status === "logged-out" || status >= 500;
    if (task() || !(failed || current.querySelector("[data-poll]"))) return;
    if (!queue.length) {  // a save's own status stays until it is sent
      statusEl.textContent = status === "logged-out"
        ? "You are logged out: log in again in another tab; this page keeps looking."
        : failed ? "The server did not answer; this page keeps looking." : "";
    }
    schedulePoll();
  }

  function setPreloaded(html) {
    const tpl = document.createElement("template");
    tpl.innerHTML = html;
    const next = tpl.content.querySelector("section.task");
    // A late answer may carry a task this page has shown and judged since: never again.
    if (next && !heldIds().includes(next.dataset.taskId) && !judged.has(next.dataset.taskId)) {
      preloaded.content.replaceChildren(next);
      clearTimeout(pollTimer);
      pollTimer = null;
      pollDelay = 0;
      if (!task()) showNext();
      return true;
    }
    return false;
  }

  async function preload() {
    if (preloading || preloaded.content.querySelector("section.task")) return 200;
    preloading = true;
    let status;
    try {
      status = await claimNext();
    } finally {
      preloading = false;
    }
    // The page's first task came in and went on show: claim the one after it too.
    if (status === 200 && !preloaded.content.querySelector("section.task")) preload();
    return status;
  }

  async function claimNext() {
    // Claiming a task changes state: a POST, never a GET (a prefetch or a link claims nothing).
    const body = new FormData();
    heldIds().forEach((id) => body.append("held", id));
    const res = await fetch(root.dataset.nextUrl, {
      method: "POST", body, credentials: "same-origin", redirect: "manual",
      headers: { "X-Requested-With": "fetch", "X-CSRFToken": csrf() },
    });
    if (res.type === "opaqueredirect") return "logged-out";  // the login page: not a task
    if (res.status !== 200) return res.status;
    if (res.headers.get("X-No-Task")) {
      doneHtml = await res.text();
      if (!queue.length) showAllDone();
      return 204;
    }
    // 200 only when a task came (a late answer with a task already shown brings none, and
    // asking again at once for it would never end).
    return setPreloaded(await res.text()) ? 200 : 0;
  }

  function showProgress(p) {
    const box = current.querySelector("[data-progress]");
    if (!p || !box) return;
    const set = (sel, text) => { const el = box.querySelector(sel); if (el) el.textContent = text; };
    const bar = (sel, value) => { const el = box.querySelector(sel); if (el) el.value = value; };
    set("[data-count=mine]", p.mine);
    set("[data-count=project]", `${p.project_done} / ${p.project_needed}`);
    if (p.tasks_line !== undefined) set("[data-count=tasks]", p.tasks_line);
    bar("[data-bar=project]", p.project_percent);
    if (p.batch_needed !== undefined) {
      set("[data-count=batch]", `${p.batch_done} / ${p.batch_needed}`);
      bar("[data-bar=batch]", p.batch_percent);
    }
  }

  function showError(message) {
    const p = document.createElement("p");
    p.className = "error";
    p.textContent = message;
    errorsEl.appendChild(p);
  }

  // --- saving: one queue, retried with the same key until the server answers.
  const queue = [];
  let sending = false;

  async function send() {
    if (sending) return;
    sending = true;
    while (queue.length) {
      const item = queue[0];
      statusEl.textContent = `Saving… (${queue.length})`;
      let res;
      try {
        const body = new FormData();
        // The token in the form goes stale when a new login rotates it; the header reads the
        // current cookie on every attempt instead.
        item.fields.forEach(([k, v]) => { if (k !== "csrfmiddlewaretoken") body.append(k, v); });
        heldIds().forEach((id) => body.append("held", id));
        res = await fetch(item.url, {
          method: "POST", body, credentials: "same-origin", redirect: "manual",
          headers: { "Idempotency-Key": item.key, "X-CSRFToken": csrf(), "X-Requested-With": "fetch" },
        });
      } catch (err) {
        res = null;
      }
      // A redirect means the session ended (the login page): keep the answers and retry,
      // so a login in another tab lets the save go through.
      const loggedOut = res !== null && res.type === "opaqueredirect";
      if (res === null || res.status >= 500 || loggedOut) {
        item.tries += 1;
        statusEl.textContent = loggedOut
          ? `Not saved: you are logged out. Log in again in another tab; retrying (${item.tries})…`
          : `Not saved yet, retrying (${item.tries})…`;
        const cap = loggedOut ? 3000 : 30000;  // a login elsewhere should take effect soon
        await new Promise((r) => setTimeout(r, Math.min(cap, 500 * 2 ** item.tries)));
        continue;
      }
      queue.shift();
      if (res.ok) {
        const info = JSON.parse(res.headers.get("X-Judgment") || "{}");
        statusEl.textContent = info.replayed ? "Saved (confirmed)" : "Saved ✓";
        setPreloaded(await res.text());
        showProgress(JSON.parse(res.headers.get("X-Progress") || "null"));
      } else {
        let message = `Task ${item.taskId} was not saved (${res.status}).`;
        try { message = `Task ${item.taskId} was not saved: ${(await res.json()).message}`; } catch (e) { /* not JSON */ }
        showError(message);
        statusEl.textContent = "";
      }
    }
    sending = false;
    preload().catch(() => { if (!task()) schedulePoll(); });  // the network: asked again
  }

  window.addEventListener("beforeunload", (e) => {
    if (queue.length) { e.preventDefault(); e.returnValue = ""; }
  });

  // --- checks: each unanswered question says so beside itself, and comes into view.
  function clearError(fieldset) {
    const el = fieldset && fieldset.querySelector(".field-error");
    if (el) { el.hidden = true; el.textContent = ""; fieldset.removeAttribute("aria-invalid"); }
  }

  function unanswered(f) {
    const missing = Array.from(f.querySelectorAll("fieldset[data-question]")).filter(
      (fs) => !fs.querySelector("input[type=radio]:checked"));
    f.querySelectorAll("fieldset[data-question]").forEach(clearError);
    missing.forEach((fs) => {
      const el = fs.querySelector(".field-error");
      el.textContent = "Answer this question first.";
      el.hidden = false;
      fs.setAttribute("aria-invalid", "true");
    });
    if (missing.length) {
      missing[0].scrollIntoView({ block: "nearest" });
      missing[0].querySelector("input[type=radio]").focus({ preventScroll: true });
    }
    return missing.length;
  }

  function submitCurrent() {
    const f = form();
    if (!f || unanswered(f)) return;
    if (editing) { f.submit(); return; }  // a plain post: the server answers with history
    const t = task();
    if (!t) return;
    f.elements.active_seconds.value = active.toFixed(1);
    judged.add(t.dataset.taskId);
    queue.push({
      url: f.action, key: t.dataset.key, taskId: t.dataset.taskId, tries: 0,
      fields: Array.from(new FormData(f).entries()),
    });
    showNext();
    send();
  }

  // --- keyboard
  const ORDER = ["persona_sensitive", "personal_sensitive"];
  const YND = { y: "yes", n: "no", d: "dont_know" };
  // This task's answers given on this page, latest last, each with the value it replaced
  // (Backspace puts that back: nothing on a new task, the stored answer on the edit page).
  // y/n/d answer the first of ORDER not answered here yet, so on the edit page, where
  // both are pre-filled, they still go to question 2 first, then question 3.
  let answered = [];
  let shown = {};  // each question's answer as the page last set it (to undo a click too)

  function checked(f, name) {
    return f.querySelector(`input[name="${name}"]:checked`)?.value ?? null;
  }

  function record(name, before, value) {
    answered.push({ name, before });
    shown[name] = value;
  }

  function choose(name, value) {
    const f = form();
    const input = f?.querySelector(`input[name="${name}"][value="${value}"]`);
    if (!input) return;
    record(name, checked(f, name), value);
    input.checked = true;
    clearError(input.closest("fieldset"));
  }

  function undo() {
    const f = form();
    const last = answered.pop();
    if (!f || !last) return;
    f.querySelectorAll(`input[name="${last.name}"]`).forEach((i) => {
      i.checked = i.value === last.before;
    });
    shown[last.name] = last.before;
  }

  function forgetAnswers() {
    answered = [];
    shown = {};
    const f = form();
    f?.querySelectorAll("input[type=radio]:checked").forEach((i) => { shown[i.name] = i.value; });
    // The bar's "Whole topic" opens the shown task's topic: hidden when it has no more to say.
    const topic = document.querySelector("button[data-toggle=topic]");
    if (topic) topic.hidden = !current.querySelector("dialog[data-topic]");
  }

  document.addEventListener("change", (e) => {
    if (e.target.type !== "radio" || !current.contains(e.target)) return;
    // Answered by mouse: on the undo list like a key, and the keys go on to the next question.
    record(e.target.name, shown[e.target.name] ?? null, e.target.value);
    clearError(e.target.closest("fieldset[data-question]"));
  });

  document.addEventListener("submit", (e) => {
    if (e.target.matches("form.answers") && current.contains(e.target)) {
      e.preventDefault();
      submitCurrent();
    }
  });

  function toggleGuidelines() {
    const g = document.getElementById("guidelines");
    if (g.open) g.close(); else g.showModal();
  }

  function openTopic() {
    const t = current.querySelector("dialog[data-topic]");
    if (t && !t.open) t.showModal();
  }

  document.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) {
      if (e.key === "Enter" && e.target.name === "comment") { e.preventDefault(); submitCurrent(); }
      return;
    }
    if (document.querySelector("dialog[open]")) return;  // the dialog's own keys (Esc)
    const tag = (e.target.tagName || "").toLowerCase();
    if (tag === "textarea" || (tag === "input" && e.target.type !== "radio")) {
      if (e.key === "Escape") e.target.blur();
      return;
    }
    if (tag === "button" && e.key === "Enter") return;  // the button's own action
    const f = form();
    if (e.key === "g") {
      toggleGuidelines();
    } else if (e.key === "h") {
      location.href = root.dataset.historyUrl;
    } else if (!f) {
      return;
    } else if (["0", "1", "2"].includes(e.key)) {
      choose("relevance", e.key);
    } else if (YND[e.key]) {
      const target = ORDER.find((name) => !answered.some((a) => a.name === name)) || ORDER[1];
      choose(target, YND[e.key]);
    } else if (e.key === "Y" || e.key === "N" || e.key === "D") {
      choose("personal_sensitive", YND[e.key.toLowerCase()]);
    } else if (e.key === "Backspace") {
      undo();
    } else if (e.key === "Enter") {
      submitCurrent();
    } else if (e.key === "c") {
      f.elements.comment.focus();
    } else if (e.key === "o" && current.querySelector("dialog[data-topic]")) {
      openTopic();
    } else if (e.key === "p") {
      const p = current.querySelector("[data-persona]");
      p.open = !p.open;
    } else if (e.key === "t" && current.querySelector("[data-thread]")) {
      const t = current.querySelector("[data-thread]");
      t.open = !t.open;
      if (t.open) t.scrollIntoView({ block: "nearest" });
    } else if (e.key === "s" && current.querySelector("form.skip details")) {
      const d = current.querySelector("form.skip details");
      d.open = true;
      d.querySelector("input[name=reason]").focus();
    } else {
      return;
    }
    e.preventDefault();
  });

  document.addEventListener("click", (e) => {
    if (e.target.closest("[data-toggle=guidelines]")) toggleGuidelines();
    if (e.target.closest("[data-toggle=topic]")) openTopic();
  });

  startTask();
  if (!editing) poll();  // the page claims nothing by itself (GET): the next task, or the first, by POST
})();
