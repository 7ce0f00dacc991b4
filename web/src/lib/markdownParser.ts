/**
 * Markdown through `marked` (raw HTML escaped to text), then DOMPurify with an allow-list that
 * keeps formatting and drops anything active. Nothing in a message may run script or load from
 * another host: no <script>, no event handlers, no `javascript:` or `data:` links, no SVG or
 * MathML, no <img> that is not one of our uploads, no style attributes, no forms or frames. The
 * page's CSP is the second wall behind this one. Its own chunk (about 26 KB gzipped), fetched
 * as the page starts (lib/markdown.ts): plain chat lines never need it.
 */
import DOMPurify from "dompurify";
import { Marked } from "marked";
import { escapeHtml, isLocalUpload } from "./markdown";

const marked = new Marked({ gfm: true, breaks: true, async: false });

// Raw HTML in a message is shown as the text it is, never parsed: chat is Markdown, and a tag
// that never becomes an element cannot carry a handler (the browser would report even a
// blocked one as a CSP violation while the sanitizer parses it).
marked.use({ renderer: { html: ({ text }) => escapeHtml(text) } });

const ALLOWED_TAGS = [
  "a", "b", "blockquote", "br", "code", "del", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr",
  "i", "img", "input", "li", "ol", "p", "pre", "s", "span", "strong", "sub", "sup", "table",
  "tbody", "td", "th", "thead", "tr", "ul",
];
const ALLOWED_ATTR = ["href", "title", "alt", "src", "class", "align", "type", "checked", "disabled", "start"];

function isSafeLink(href: string): boolean {
  try {
    const url = new URL(href, location.origin);
    return ["http:", "https:", "mailto:"].includes(url.protocol);
  } catch {
    return false;
  }
}

const purify = DOMPurify(window);
purify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A") {
    const href = node.getAttribute("href") ?? "";
    if (!isSafeLink(href)) {
      node.removeAttribute("href");
    } else if (new URL(href, location.origin).origin !== location.origin) {
      node.setAttribute("target", "_blank");
      node.setAttribute("rel", "noopener noreferrer nofollow");
    }
  } else if (node.tagName === "IMG") {
    const src = node.getAttribute("src") ?? "";
    if (!isLocalUpload(src)) {
      // A remote image would tell its host who read the message, and when: show its text.
      const text = node.ownerDocument.createElement("span");
      text.className = "md-img-blocked";
      text.textContent = `[image: ${node.getAttribute("alt") || src}]`;
      node.replaceWith(text);
    } else {
      node.setAttribute("loading", "lazy");
    }
  } else if (node.tagName === "INPUT") {
    if (node.getAttribute("type") !== "checkbox") node.remove();
    else node.setAttribute("disabled", "");
  }
  if (node.hasAttribute("class")) {
    const kept = (node.getAttribute("class") ?? "")
      .split(/\s+/)
      .filter((c) => /^(language-[\w+-]+|md-img-blocked|hljs(-[\w-]+)?)$/.test(c));
    if (kept.length) node.setAttribute("class", kept.join(" "));
    else node.removeAttribute("class");
  }
});

/** Sanitized HTML for Markdown text. */
export function parse(source: string): string {
  const html = marked.parse(source) as string;
  return purify.sanitize(html, {
    ALLOWED_TAGS,
    ALLOWED_ATTR: [...ALLOWED_ATTR, "target", "rel", "loading"],
    ALLOW_DATA_ATTR: false,
    ALLOW_ARIA_ATTR: false,
    ALLOWED_URI_REGEXP: /^(?:https?:|mailto:|\/(?!\/)|#)/i,
  });
}

/** highlight.js's output kept to what it makes: `<span class="hljs-...">` around escaped code. */
export function sanitizeSpans(html: string): string {
  return purify.sanitize(html, { ALLOWED_TAGS: ["span"], ALLOWED_ATTR: ["class"] });
}
