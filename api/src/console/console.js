// Keeps a live console page current: when the event feed moves, the page
// is read again and its main content replaced, without a reload. Forms and
// links work without this script.
(() => {
  "use strict";
  const main = document.querySelector("main[data-live]");
  if (!main || !window.EventSource) return;
  let pending = null;
  let reading = false;
  const refresh = async () => {
    pending = null;
    if (reading) { pending = setTimeout(refresh, 250); return; }
    reading = true;
    try {
      const answer = await fetch(location.href, { credentials: "same-origin", cache: "no-store" });
      if (answer.redirected || !answer.ok) return;
      const fresh = new DOMParser().parseFromString(await answer.text(), "text/html").querySelector("main");
      if (!fresh) return;
      // Leave a field the operator is typing in alone.
      if (main.contains(document.activeElement) && document.activeElement.matches("input, select, textarea")) return;
      main.innerHTML = fresh.innerHTML;
      document.body.dataset.updates = String(Number(document.body.dataset.updates || "0") + 1);
    } finally {
      reading = false;
    }
  };
  const stream = new EventSource("/console/stream");
  stream.onmessage = () => { if (!pending) pending = setTimeout(refresh, 200); };
})();
