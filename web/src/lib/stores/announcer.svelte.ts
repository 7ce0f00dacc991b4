/**
 * The page's one polite status region: what happened that a screen reader should hear once
 * ("Researcher replied"), instead of live regions over content that re-renders (a virtualized
 * feed, a streaming reply, a countdown), which would announce it again and again.
 */
class Announcer {
  text = $state("");
  private timer: ReturnType<typeof setTimeout> | undefined;

  /** Say it once; the same words again are said again (the region is emptied first). */
  say(message: string): void {
    clearTimeout(this.timer);
    this.text = "";
    this.timer = setTimeout(() => (this.text = message), 50);
  }
}

export const announcer = new Announcer();
