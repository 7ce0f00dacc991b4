/**
 * The one way text from people and agents becomes HTML: Markdown through `marked` (raw HTML
 * escaped to text), then DOMPurify with an allow-list that keeps formatting and drops anything active. Nothing in a
 * message may run script or load from another host: no <script>, no event handlers, no
 * `javascript:` or `data:` links, no SVG or MathML, no <img> that is not one of our uploads, no
 * style attributes, no forms or frames. The page's CSP is the second wall behind this one.
 */
import DOMPurify from "dompurify";
import { Marked } from "marked";

const marked = new Marked({ gfm: true, breaks: true, async: false });

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

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

/** An upload's address as the server makes it: `/uploads/<yyyy-mm>/<name>`, the name of word
 * characters, dots, dashes and percent escapes (src/palaver/store/uploads.py). */
const UPLOAD = /^\/uploads\/\d{4}-\d{2}\/(?:[\w.-]|%[0-9A-Fa-f]{2})+$/;

/**
 * Same-origin paths only, and only our uploads: an `<img>` must not point at any other path
 * of this origin (`/uploads/../api/...`). Dot segments, escaped or not, and escaped slashes
 * or backslashes are refused; the browser's own resolution must leave the path unchanged.
 */
export function isLocalUpload(url: string): boolean {
  if (!UPLOAD.test(url)) return false;
  let name: string;
  try {
    name = decodeURIComponent(url.slice(url.lastIndexOf("/") + 1));
  } catch {
    return false;
  }
  if (name === "." || name === ".." || /[/\\]/.test(name)) return false;
  try {
    return new URL(url, location.origin).pathname === url;
  } catch {
    return false;
  }
}

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

/** Text with nothing Markdown would act on: most chat lines. */
const PLAIN = /^[^*_`#[\]<>!|~\\&:=+-]*$/;
const CACHE_SIZE = 2000;
const cache = new Map<string, string>();

/**
 * Sanitized HTML for a message. Plain text skips the parser (escaped, paragraphs and line
 * breaks kept), and settled texts are cached, so scrolling back through thousands of rows does
 * not parse each one again. Text still changing (a streaming reply, a preview being typed) is
 * rendered with `cache: false`: each partial would be an entry read once and never again.
 */
export function renderMarkdown(source: string, options: { cache?: boolean } = {}): string {
  let html = cache.get(source);
  if (html === undefined) {
    html = isPlain(source) ? plain(source) : parse(source);
    if (options.cache ?? true) {
      if (cache.size >= CACHE_SIZE) cache.delete(cache.keys().next().value!);
      cache.set(source, html);
    }
  }
  return html;
}

/** How many rendered texts the cache holds (for tests). */
export function cachedCount(): number {
  return cache.size;
}

/** One line of plain text: what `renderMarkdown` makes of it is one paragraph of that very
 * text, which a component can render as a text node instead of parsing HTML. */
export function isPlainLine(source: string): boolean {
  return !/[\r\n]/.test(source) && isPlain(source);
}

/** No Markdown syntax, no numbered list, nothing GFM would turn into a link. */
function isPlain(source: string): boolean {
  return PLAIN.test(source) && !/^\s*\d+[.)]\s|www\.|\S@\S+\.\S/im.test(source);
}

function plain(source: string): string {
  return source
    .split(/\n{2,}/)
    .map((p) => `<p>${escapeHtml(p).replace(/\n/g, "<br>")}</p>`)
    .join("");
}

function parse(source: string): string {
  const html = marked.parse(source) as string;
  return purify.sanitize(html, {
    ALLOWED_TAGS,
    ALLOWED_ATTR: [...ALLOWED_ATTR, "target", "rel", "loading"],
    ALLOW_DATA_ATTR: false,
    ALLOW_ARIA_ATTR: false,
    ALLOWED_URI_REGEXP: /^(?:https?:|mailto:|\/(?!\/)|#)/i,
  });
}

type Highlighter = (code: string, language: string) => string | null;
let highlighter: Promise<Highlighter> | null = null;

/** highlight.js with a few languages, fetched the first time a code block needs it. */
function loadHighlighter(): Promise<Highlighter> {
  highlighter ??= import("./highlight").then((m) => m.highlight);
  return highlighter;
}

/** Colour the code blocks under `root` that name a language; the rest stay plain. */
export async function highlightIn(root: HTMLElement): Promise<void> {
  const blocks = root.querySelectorAll<HTMLElement>("pre > code[class*='language-']");
  if (blocks.length === 0) return;
  const highlight = await loadHighlighter();
  for (const block of blocks) {
    if (block.dataset.highlighted) continue;
    const language = /language-([\w+-]+)/.exec(block.className)?.[1] ?? "";
    const html = highlight(block.textContent ?? "", language);
    if (html !== null) {
      // highlight.js escapes the code and adds only <span class="hljs-...">.
      block.innerHTML = purify.sanitize(html, { ALLOWED_TAGS: ["span"], ALLOWED_ATTR: ["class"] });
      block.classList.add("hljs");
    }
    block.dataset.highlighted = "1";
  }
}
