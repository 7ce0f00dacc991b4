import { afterEach, describe, expect, it, vi } from "vitest";
import { routeLinks, routedPath } from "./links";

const HERE = new URL("http://palaver.test/c/ch_1");

function link(attrs: Record<string, string>): HTMLAnchorElement {
  const a = document.createElement("a");
  for (const [k, v] of Object.entries(attrs)) a.setAttribute(k, v);
  return a;
}

function click(init: MouseEventInit = {}): MouseEvent {
  return new MouseEvent("click", { button: 0, bubbles: true, cancelable: true, ...init });
}

describe("routedPath", () => {
  it.each([
    ["/c/ch_2", "/c/ch_2"],
    ["/admin/agents/agent_1/knowledge", "/admin/agents/agent_1/knowledge"],
    ["http://palaver.test/admin/agents", "/admin/agents"],
    ["../admin/settings", "/admin/settings"],
    ["/c/ch_2?x=1#m", "/c/ch_2?x=1#m"],
  ])("routes %s in the page", (href, want) => {
    expect(routedPath(click(), link({ href }), HERE)).toBe(want);
  });

  it.each([
    ["another host", { href: "https://example.org/c/x" }],
    ["a protocol-relative host", { href: "//example.org/c/x" }],
    ["mailto", { href: "mailto:ann@example.org" }],
    ["an upload", { href: "/uploads/2026-01/a.png" }],
    ["the API", { href: "/api/docs" }],
    ["a download", { href: "/c/x", download: "x" }],
    ["a new tab", { href: "/c/x", target: "_blank" }],
    ["the skip link", { href: "#composer-input" }],
    ["no href", {}],
  ])("leaves %s to the browser", (_, attrs) => {
    expect(routedPath(click(), link(attrs), HERE)).toBeNull();
  });

  it.each([{ ctrlKey: true }, { metaKey: true }, { shiftKey: true }, { altKey: true }, { button: 1 }])(
    "leaves a modified click to the browser (%o)",
    (init) => {
      expect(routedPath(click(init), link({ href: "/c/x" }), HERE)).toBeNull();
    },
  );
});

describe("routeLinks", () => {
  afterEach(() => {
    document.body.innerHTML = "";
  });

  it("routes a click on a nested element of a link, once, for the whole document", () => {
    const go = vi.fn();
    const stop = routeLinks(go);
    document.body.innerHTML = '<nav><a href="/admin/agents"><span>Agents</span></a><a href="https://x.org/">x</a></nav>';
    const inner = document.querySelector("span")!;
    const event = click();
    inner.dispatchEvent(event);
    expect(go).toHaveBeenCalledWith("/admin/agents");
    expect(event.defaultPrevented).toBe(true);
    const away = click();
    document.querySelector<HTMLAnchorElement>("a[href^=https]")!.dispatchEvent(away);
    expect(away.defaultPrevented).toBe(false);
    stop();
    inner.dispatchEvent(click());
    expect(go).toHaveBeenCalledTimes(1);
  });
});
