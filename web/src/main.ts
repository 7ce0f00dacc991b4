import { mount } from "svelte";
import App from "./App.svelte";
import { routeLinks } from "./lib/links";
import { router } from "./lib/router.svelte";
import "./app.css";

// Every same-origin link to a page address is routed here: components write plain <a href>.
routeLinks((path) => router.go(path));

mount(App, { target: document.getElementById("app")! });
