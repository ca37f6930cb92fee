// Small keyboard helpers; everything works without them. No inline script anywhere (CSP).
document.addEventListener("keydown", (event) => {
  const tag = (event.target.tagName || "").toLowerCase();
  if (tag === "input" || tag === "textarea" || tag === "select") return;
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  if (event.key === "/") {
    const box = document.querySelector("input[type=search]");
    if (box) { event.preventDefault(); box.focus(); box.select(); }
    return;
  }
  // A form with data-keys="r:release w:withhold" submits the button of that value on the key.
  const form = document.querySelector("form[data-keys]");
  if (!form) return;
  for (const pair of form.dataset.keys.split(" ")) {
    const [key, value] = pair.split(":");
    if (event.key === key) {
      const button = form.querySelector(`button[value="${value}"]`);
      if (button) { event.preventDefault(); form.requestSubmit(button); }
      return;
    }
  }
});

// A select with data-autosubmit submits its form when changed (the button stays for no-JS).
document.addEventListener("change", (event) => {
  if (event.target.matches("select[data-autosubmit]")) event.target.form.requestSubmit();
});
