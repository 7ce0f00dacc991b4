import { beforeAll, describe, expect, it } from "vitest";
import { cachedCount, isLocalUpload, loadMarkdown, renderMarkdown } from "./markdown";

beforeAll(async () => {
  await loadMarkdown();
});

function dom(html: string): HTMLElement {
  const div = document.createElement("div");
  div.innerHTML = html;
  return div;
}

describe("isLocalUpload", () => {
  it.each([
    "/uploads/2026-01/photo.png",
    "/uploads/2026-01/a_b-c.d.jpeg",
    "/uploads/2026-01/my%20photo.png",
  ])("accepts our upload %s", (url) => {
    expect(isLocalUpload(url)).toBe(true);
  });

  it.each([
    "/uploads/../api",
    "/uploads/../api/me",
    "/uploads/%2e%2e/login",
    "/uploads/%2E%2E/login",
    "/uploads/.%2e/login",
    "/uploads/2026-01/..",
    "/uploads/2026-01/%2e%2e",
    "/uploads/2026-01/.",
    "/uploads/./login",
    "/uploads/2026-01%2f..%2f..%2fapi/x",
    "/uploads/2026-01/a%2f..%2f..%2fapi",
    "/uploads/2026-01/a%5c..%5capi",
    "/uploads/2026-01\\..\\api",
    "//evil.example/uploads/2026-01/a.png",
    "https://evil.example/uploads/2026-01/a.png",
    "/uploads/2026-01/a.png?x=1",
    "/uploads/2026-01/a.png#f",
    "/uploads/notamonth/a.png",
    "/uploads/2026-01/a/b.png",
    "data:image/png;base64,AAAA",
    "javascript:alert(1)",
    "",
  ])("refuses %s", (url) => {
    expect(isLocalUpload(url)).toBe(false);
  });
});

describe("renderMarkdown: links", () => {
  function href(markdown: string): string | null {
    return dom(renderMarkdown(markdown)).querySelector("a")?.getAttribute("href") ?? null;
  }

  it("keeps http, https, mailto and same-origin links", () => {
    expect(href("[a](https://example.com/x)")).toBe("https://example.com/x");
    expect(href("[a](http://example.com/)")).toBe("http://example.com/");
    expect(href("[mail](mailto:ann@example.com)")).toBe("mailto:ann@example.com");
    expect(href("[here](/c/ch_1)")).toBe("/c/ch_1");
  });

  it("opens external links in a new tab without a referrer, same-origin ones in place", () => {
    const out = dom(renderMarkdown("[a](https://example.com/) [b](/c/x)")).querySelectorAll("a");
    expect(out[0].getAttribute("target")).toBe("_blank");
    expect(out[0].getAttribute("rel")).toBe("noopener noreferrer nofollow");
    expect(out[1].hasAttribute("target")).toBe(false);
  });

  it.each([
    "[x](javascript:alert(1))",
    "[x](JavaScript:alert(1))",
    "[x](JAVASCRIPT:alert(1))",
    "[x]( javascript:alert(1))",
    "[x](java\tscript:alert(1))",
    "[x](&#106;avascript:alert(1))",
    "[x](&#x6A;avascript:alert(1))",
    "[x](javascript&#58;alert(1))",
    "[x](%6Aavascript:alert(1))",
    "[x](<javascript:alert(1)>)",
    "[x](vbscript:msgbox(1))",
    "[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "[x](//evil.example/)",
    "<javascript:alert(1)>",
    "[x][r]\n\n[r]: javascript:alert(1)",
  ])("drops the link of %s", (markdown) => {
    const h = href(markdown);
    expect(h === null || !/^\s*(javascript|vbscript|data):/i.test(decodeURIComponent(h))).toBe(true);
    expect(h === null || !h.startsWith("//")).toBe(true);
    expect(renderMarkdown(markdown)).not.toMatch(/href="\s*(javascript|vbscript|data):/i);
  });
});

describe("renderMarkdown: images", () => {
  it("keeps our uploads, lazily", () => {
    const img = dom(renderMarkdown("![cat](/uploads/2026-01/cat.png)")).querySelector("img");
    expect(img?.getAttribute("src")).toBe("/uploads/2026-01/cat.png");
    expect(img?.getAttribute("loading")).toBe("lazy");
  });

  it.each([
    "![x](https://evil.example/track.png)",
    "![x](data:image/png;base64,iVBORw0KGgo=)",
    "![x](data:image/svg+xml;base64,PHN2Zz48L3N2Zz4=)",
    "![x](/uploads/../api/me)",
    "![x](/uploads/%2e%2e/login)",
    "![x](/api/me)",
    "![x](javascript:alert(1))",
  ])("shows %s as text", (markdown) => {
    const out = dom(renderMarkdown(markdown));
    expect(out.querySelector("img")).toBeNull();
    expect(out.querySelector(".md-img-blocked")?.textContent).toBe("[image: x]");
  });
});

describe("renderMarkdown: raw HTML and SVG", () => {
  it.each([
    "<script>alert(1)</script>",
    '<img src=x onerror="alert(1)">',
    '<svg onload="alert(1)"><circle r="4"/></svg>',
    '<svg><a xlink:href="javascript:alert(1)"><text>x</text></a></svg>',
    "<math><mi>x</mi></math>",
    '<a href="javascript:alert(1)">x</a>',
    '<iframe src="https://evil.example"></iframe>',
    '<p style="color:red">x</p>',
  ])("shows %s as text, never as elements", (markdown) => {
    const out = dom(renderMarkdown(markdown));
    expect(out.querySelector("script, svg, math, iframe, img, [style], [onerror], [onload]")).toBeNull();
    expect(out.querySelector("a[href]")).toBeNull();
    expect(out.textContent).toContain("<");
  });

  it("keeps the formatting it allows", () => {
    const out = dom(renderMarkdown("**b** _i_ `c`"));
    expect(out.querySelector("strong")?.textContent).toBe("b");
    expect(out.querySelector("em")?.textContent).toBe("i");
    expect(out.querySelector("code")?.textContent).toBe("c");
    const code = dom(renderMarkdown("```py\nx = 1\n```")).querySelector("pre > code");
    expect(code?.className).toBe("language-py");
  });

  it("escapes plain text that skips the parser", () => {
    expect(renderMarkdown('say "hi"\nthere\n\nnext')).toBe("<p>say &#34;hi&#34;<br>there</p><p>next</p>");
  });
});

describe("renderMarkdown: the cache", () => {
  it("keeps settled texts and not the ones asked not to", () => {
    const before = cachedCount();
    renderMarkdown("**settled** once");
    renderMarkdown("**settled** once");
    expect(cachedCount()).toBe(before + 1);
    for (let i = 0; i < 50; i += 1) renderMarkdown(`**partial** ${"x".repeat(i)}`, { cache: false });
    expect(cachedCount()).toBe(before + 1);
    expect(renderMarkdown("**partial** xx", { cache: false })).toContain("<strong>partial</strong>");
  });
});
