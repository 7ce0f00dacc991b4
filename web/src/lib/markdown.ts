/**
 * The one way text from people and agents becomes HTML. Plain chat lines (most of them) are
 * escaped here; Markdown goes through `marked` and DOMPurify in `markdownParser.ts`, a chunk of
 * its own fetched as the page starts (`loadMarkdown`), so the first load does not wait for it.
 * Until it has come, Markdown shows as its escaped source text, never as unsanitized HTML.
 */
import { markdownReady } from "./markdownReady.svelte";

/** Text escaped for HTML: `&`, `<`, `>` and both quotes. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

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

type Parser = typeof import("./markdownParser");
let parser: Parser | null = null;
let loading: Promise<Parser> | null = null;

/** The Markdown parser, fetched once; a failed fetch is tried again on the next call. */
export function loadMarkdown(): Promise<Parser> {
  loading ??= import("./markdownParser").then(
    (m) => {
      parser = m;
      markdownReady.loaded = true;
      return m;
    },
    (error: unknown) => {
      loading = null;
      throw error;
    },
  );
  return loading;
}

/** Whether Markdown is rendered yet (else it shows as its escaped text). */
export function markdownLoaded(): boolean {
  return parser !== null;
}

/** Text with nothing Markdown would act on: most chat lines. */
const PLAIN = /^[^*_`#[\]<>!|~\\&:=+-]*$/;
const CACHE_SIZE = 2000;
const cache = new Map<string, string>();

/**
 * Sanitized HTML for a message. Plain text skips the parser (escaped, paragraphs and line
 * breaks kept), and settled texts are cached, so scrolling back through thousands of rows does
 * not parse each one again. Text still changing (a streaming reply, a preview being typed) is
 * rendered with `cache: false`: each partial would be an entry read once and never again.
 * Before the parser has come, Markdown is its escaped source, not cached.
 */
export function renderMarkdown(source: string, options: { cache?: boolean } = {}): string {
  let html = cache.get(source);
  if (html === undefined) {
    if (isPlain(source)) html = plain(source);
    else if (parser) html = parser.parse(source);
    else return plain(source);
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
  const [highlight, { sanitizeSpans }] = await Promise.all([loadHighlighter(), loadMarkdown()]);
  for (const block of blocks) {
    if (block.dataset.highlighted) continue;
    const language = /language-([\w+-]+)/.exec(block.className)?.[1] ?? "";
    const html = highlight(block.textContent ?? "", language);
    if (html !== null) {
      // highlight.js escapes the code and adds only <span class="hljs-...">.
      block.innerHTML = sanitizeSpans(html);
      block.classList.add("hljs");
    }
    block.dataset.highlighted = "1";
  }
}
