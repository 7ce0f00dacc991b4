import { describe, expect, it } from "vitest";
import { cachedCount, loadMarkdown, markdownLoaded, renderMarkdown } from "./markdown";

// Its own file: the module's parser must not have been loaded by another test.
describe("renderMarkdown before the parser has come", () => {
  it("shows Markdown as its escaped text, uncached, then renders it once loaded", async () => {
    expect(markdownLoaded()).toBe(false);
    const before = cachedCount();
    expect(renderMarkdown("**bold** <img src=x onerror=alert(1)>")).toBe(
      "<p>**bold** &#60;img src=x onerror=alert(1)&#62;</p>",
    );
    expect(cachedCount()).toBe(before);
    expect(renderMarkdown("plain words")).toBe("<p>plain words</p>");
    await loadMarkdown();
    expect(markdownLoaded()).toBe(true);
    const html = renderMarkdown("**bold** <img src=x onerror=alert(1)>");
    expect(html).toContain("<strong>bold</strong>");
    expect(html).not.toContain("<img");
  });
});
