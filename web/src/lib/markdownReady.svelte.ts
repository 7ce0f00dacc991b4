/** Whether the Markdown parser's chunk has come (lib/markdown.ts sets it): every `Markdown`
 * component reads it, so each renders again once it arrives, whichever one asked. */
export const markdownReady = $state({ loaded: false });
