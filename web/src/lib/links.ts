/**
 * The one link handler: a click on a same-origin link to one of the page's own addresses is
 * routed in the page (history.pushState) instead of loading it again. Links that should load
 * (another host, /api, /uploads, a download, a new tab, a modified click, a fragment on this
 * page) are left to the browser. Components write plain `<a href>`; nothing else is needed.
 */
const SERVER_PATHS = /^\/(api|uploads|ws)(\/|$)/;

/** Where to route a click, or null to let the browser have it. */
export function routedPath(event: MouseEvent, anchor: HTMLAnchorElement, here: Location | URL): string | null {
  if (event.defaultPrevented || event.button !== 0) return null;
  if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return null;
  if (anchor.hasAttribute("download")) return null;
  const target = anchor.getAttribute("target");
  if (target && target !== "_self") return null;
  const raw = anchor.getAttribute("href");
  if (raw === null || raw === "") return null;
  let url: URL;
  try {
    url = new URL(raw, here.href);
  } catch {
    return null;
  }
  if (url.origin !== here.origin || SERVER_PATHS.test(url.pathname)) return null;
  // A fragment of this very page (the skip link) is the browser's to follow.
  if (url.pathname === here.pathname && url.search === here.search && url.hash) return null;
  return url.pathname + url.search + url.hash;
}

/** Install the handler once for the whole document. */
export function routeLinks(go: (path: string) => void): () => void {
  const onClick = (event: MouseEvent) => {
    const anchor = (event.target as Element | null)?.closest?.("a");
    if (!(anchor instanceof HTMLAnchorElement)) return;
    const path = routedPath(event, anchor, location);
    if (path === null) return;
    event.preventDefault();
    go(path);
  };
  document.addEventListener("click", onClick);
  return () => document.removeEventListener("click", onClick);
}
