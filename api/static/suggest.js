// Completions for the search box: as the reader types, /suggest?q= (OpenSearch suggestions
// JSON, [query, [completion, ...]]) fills the box's <datalist>.  Without script the box is a
// plain search box.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  const box = document.querySelector("input[name=q]");
  const list = document.getElementById("suggestions");
  if (!box || !list) return;
  let asked = "";
  let pending = null;
  box.addEventListener("input", () => {
    const q = box.value;
    if (q === asked) return;
    asked = q;
    if (pending) pending.abort();
    if (!q.trim()) { list.replaceChildren(); return; }
    pending = new AbortController();
    fetch("/suggest?q=" + encodeURIComponent(q), {signal: pending.signal})
      .then((r) => r.ok ? r.json() : [q, []])
      .then((answer) => {
        if (answer[0] !== box.value) return;  // the reader typed on meanwhile
        list.replaceChildren(...answer[1].map((text) => {
          const option = document.createElement("option");
          option.value = text;
          return option;
        }));
      })
      .catch((err) => { if (err.name !== "AbortError") list.replaceChildren(); });
  });
});
