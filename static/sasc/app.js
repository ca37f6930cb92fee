// Small keyboard helpers; everything works without them. No inline script anywhere (CSP).
document.addEventListener("keydown", (event) => {
  const tag = (event.target.tagName || "").toLowerCase();
  // Typing goes to the field; a focused radio or checkbox (the judging page focuses its first
  // answer) takes no letters, so the page's keys still work there.
  const typing = tag === "textarea" || tag === "select" ||
    (tag === "input" && !["radio", "checkbox"].includes(event.target.type));
  if (typing) return;
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  if (document.querySelector("dialog[open]")) return;  // keys belong to the open dialog
  if (event.key === "/") {
    const box = document.querySelector("input[type=search]");
    if (box) { event.preventDefault(); box.focus(); box.select(); }
    return;
  }
  // e / E: the next / previous highlighted sensitive span of the message shown (a page
  // with a preloaded task keeps it in a <template>, out of reach of querySelectorAll).
  if (event.key === "e" || event.key === "E") {
    const marks = [...document.querySelectorAll("article.email mark.ent")].filter((m) => m.offsetParent !== null);
    if (!marks.length) return;
    event.preventDefault();
    const at = marks.indexOf(document.querySelector("mark.ent.ent-current"));
    const next = event.key === "e" ? (at + 1) % marks.length : (at - 1 + marks.length) % marks.length;
    marks.forEach((m) => m.classList.remove("ent-current"));
    marks[next].classList.add("ent-current");
    marks[next].scrollIntoView({ block: "center" });
    return;
  }
  // A form with data-keys="r:release w:withhold" submits the button of that value on the key.
  for (const form of document.querySelectorAll("form[data-keys]")) {
    for (const pair of form.dataset.keys.split(" ")) {
      const [key, value] = pair.split(":");
      if (event.key === key) {
        const button = form.querySelector(`button[value="${value}"]`);
        if (button) { event.preventDefault(); form.requestSubmit(button); }
        return;
      }
    }
  }
});

// A select with data-autosubmit submits its form when changed (the button stays for no-JS).
document.addEventListener("change", (event) => {
  if (event.target.matches("select[data-autosubmit]")) event.target.form.requestSubmit();
});

// The ? overlay: lists the keys the page declares, from a <template data-page-keys> (a <dl>)
// and from a form[data-keys] (each key and its button's label). One dialog in base.html;
// a page with neither has no list and ? does nothing. Esc closes it (a modal <dialog>).
(() => {
  const dialog = document.querySelector("dialog[data-keys-help]");
  if (!dialog) return;

  function keyList() {
    const dl = document.createElement("dl");
    document.querySelectorAll("template[data-page-keys]").forEach((tpl) => {
      tpl.content.querySelectorAll("dt, dd").forEach((el) => dl.appendChild(el.cloneNode(true)));
    });
    document.querySelectorAll("form[data-keys]").forEach((form) => {
      for (const pair of form.dataset.keys.split(" ")) {
        const [key, value] = pair.split(":");
        const button = form.querySelector(`button[value="${value}"]`);
        if (!button) continue;
        const dt = document.createElement("dt");
        const kbd = document.createElement("kbd");
        kbd.textContent = key;
        dt.appendChild(kbd);
        const dd = document.createElement("dd");
        dd.textContent = button.textContent.replace(/\s*\(.\)\s*$/, "");
        dl.append(dt, dd);
      }
    });
    return dl.children.length ? dl : null;
  }

  function openKeys() {
    const dl = keyList();
    if (!dl || dialog.open) return;
    dialog.querySelector("[data-keys-list]").replaceChildren(dl);
    dialog.showModal();  // focus moves into the dialog, to its close button
  }

  document.addEventListener("keydown", (event) => {
    if (event.key !== "?" || event.ctrlKey || event.metaKey || event.altKey) return;
    const tag = (event.target.tagName || "").toLowerCase();
    const typing = tag === "textarea" || tag === "select" ||
      (tag === "input" && !["radio", "checkbox"].includes(event.target.type));
    if (typing || document.querySelector("dialog[open]")) return;
    event.preventDefault();
    openKeys();
  });
  document.addEventListener("click", (event) => {
    if (event.target.closest("[data-keys-open]")) openKeys();
  });
  // Pages declaring keys show a button for the list; without scripts it is never shown.
  if (keyList()) document.querySelectorAll("[data-keys-open]").forEach((b) => { b.hidden = false; });
})();
