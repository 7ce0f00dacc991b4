/**
 * Mentions of the person in a rendered message: each `@Name` (or `@user_…`) naming them is
 * wrapped in `<span class="mention-me">`, outside code and links. Run on the sanitized DOM
 * after it is rendered; the text is moved, never parsed as HTML.
 */
import { isWord, mentionEnd } from "./mentions";

const SKIP = new Set(["CODE", "PRE", "A", "SPAN"]);

export function markMentions(root: HTMLElement, names: string[]): number {
  const wanted = [...names].filter(Boolean).sort((a, b) => b.length - a.length);
  if (!wanted.length) return 0;
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
    acceptNode(node) {
      for (let el = node.parentElement; el && el !== root; el = el.parentElement) {
        if (SKIP.has(el.tagName)) return NodeFilter.FILTER_REJECT;
      }
      return node.nodeValue?.includes("@") ? NodeFilter.FILTER_ACCEPT : NodeFilter.FILTER_REJECT;
    },
  });
  const nodes: Text[] = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) nodes.push(n as Text);
  let marked = 0;
  for (const node of nodes) {
    let text = node;
    let from = 0;
    for (;;) {
      const content = text.data;
      const at = content.indexOf("@", from);
      if (at === -1) break;
      from = at + 1;
      if (at > 0 && isWord(content[at - 1])) continue;
      let end = -1;
      for (const name of wanted) {
        end = mentionEnd(content, at + 1, name);
        if (end !== -1) break;
      }
      if (end === -1) continue;
      const mention = text.splitText(at);
      const rest = mention.splitText(end - at);
      const span = document.createElement("span");
      span.className = "mention-me";
      mention.replaceWith(span);
      span.append(mention);
      marked += 1;
      text = rest;
      from = 0;
    }
  }
  return marked;
}
