/**
 * The page's title: what is on screen ("#general · Palaver"), with "(N) " before it while the
 * person has N unread messages in all (mentions are among them; see docs/WEB.md).
 */
import { titled } from "./readCounts";
import { readState } from "./stores/readState.svelte";

class Title {
  base = $state("Palaver");
}

export const pageTitle = new Title();

$effect.root(() => {
  $effect(() => {
    document.title = titled(pageTitle.base, readState.total);
  });
});
