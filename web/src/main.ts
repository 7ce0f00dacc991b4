import { mount } from "svelte";
import App from "./App.svelte";
import { preloadFirstScreen } from "./lib/firstScreen";
import { routeLinks } from "./lib/links";
import { loadMarkdown } from "./lib/markdown";
import { router } from "./lib/router.svelte";
import "./app.css";
// Shared classes (.hint, .card, .actions, .progress, ...) that the dialogs and the login card
// use too: in the first load, not in the owner's lazily loaded chunk.
import "./components/admin/admin.css";

preloadFirstScreen(location.pathname);

// Every same-origin link to a page address is routed here: components write plain <a href>.
routeLinks((path) => router.go(path));

mount(App, { target: document.getElementById("app")! });

// The Markdown parser is fetched beside the session's first requests, not before the page.
loadMarkdown().catch(() => {});
