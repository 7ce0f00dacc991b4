/**
 * A section reached by its address's `#id` (a link from another screen): brought into view and
 * given focus, so that a keyboard or screen-reader user starts there too. The section carries
 * `tabindex="-1"` and a label, which is what is announced.
 */
export function reveal(id: string): void {
  const target = document.getElementById(id);
  if (!target) return;
  target.scrollIntoView({ block: "start" });
  target.focus({ preventScroll: true });
}
