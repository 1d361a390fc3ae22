/* The runs list: its filters update the list in place (htmx) and the address. Going back or
   forward, htmx restores the list from its history copy, which does not keep which option a
   select shows: the filters are set again from the address, so they match the list shown. */
"use strict";
document.addEventListener("htmx:historyRestore", () => {
  const asked = new URLSearchParams(window.location.search);
  for (const select of document.querySelectorAll("form.filters select")) {
    select.value = asked.get(select.name) || "";
  }
});
