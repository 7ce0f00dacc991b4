/**
 * A small history router. Routes are patterns like `/c/:channelId`; the server answers
 * index.html for every path outside /api, /ws and /uploads, so deep links load the page and
 * land here. Part 2's screens register more routes in `routes` below.
 */

export interface Route {
  name: string;
  params: Record<string, string>;
}

const patterns: [string, string][] = [
  ["login", "/login"],
  ["channel", "/c/:channelId"],
  ["thread", "/c/:channelId/t/:threadId"],
  ["home", "/"],
  ["adminAgents", "/admin/agents"],
  ["adminAgentNew", "/admin/agents/new"],
  ["adminAgent", "/admin/agents/:agentId"],
  ["adminKnowledge", "/admin/agents/:agentId/knowledge"],
  ["adminMemories", "/admin/agents/:agentId/memories"],
  ["adminSchedules", "/admin/schedules"],
  ["adminSettings", "/admin/settings"],
  ["adminGuests", "/admin/guests"],
  ["adminUsage", "/admin/usage"],
  ["adminAudit", "/admin/audit"],
  ["adminBackups", "/admin/backups"],
];

/** The owner's screens: for a guest these routes do not exist (the page shows its 404). */
export function isAdminRoute(route: Route): boolean {
  return route.name.startsWith("admin");
}

const NOT_FOUND: Route = { name: "notFound", params: {} };

/** A path segment decoded, or null when its escapes are malformed (`/c/%` is a link someone
 * may paste; it must land on "Nothing here", not throw and leave a blank page). */
function decode(segment: string): string | null {
  try {
    return decodeURIComponent(segment);
  } catch {
    return null;
  }
}

export function match(path: string): Route {
  const parts = path.split("/").filter(Boolean);
  for (const [name, pattern] of patterns) {
    const want = pattern.split("/").filter(Boolean);
    if (want.length !== parts.length) continue;
    const params: Record<string, string> = {};
    let ok = true;
    for (const [i, segment] of want.entries()) {
      if (segment.startsWith(":")) {
        const value = decode(parts[i]);
        if (value === null) return { ...NOT_FOUND, params: {} };
        params[segment.slice(1)] = value;
      } else if (segment !== parts[i]) {
        ok = false;
        break;
      }
    }
    if (ok) return { name, params };
  }
  return { ...NOT_FOUND, params: {} };
}

class Router {
  route = $state<Route>(match(location.pathname));

  constructor() {
    window.addEventListener("popstate", () => {
      this.route = match(location.pathname);
    });
  }

  go(path: string, replace = false): void {
    if (path === location.pathname + location.search + location.hash) return;
    if (replace) history.replaceState(null, "", path);
    else history.pushState(null, "", path);
    this.route = match(location.pathname);
  }
}

export const router = new Router();

export function agentPath(agentId: string, part: "" | "knowledge" | "memories" = ""): string {
  const base = `/admin/agents/${encodeURIComponent(agentId)}`;
  return part ? `${base}/${part}` : base;
}

export function channelPath(channelId: string): string {
  return `/c/${encodeURIComponent(channelId)}`;
}

export function threadPath(channelId: string, threadId: string): string {
  return `${channelPath(channelId)}/t/${encodeURIComponent(threadId)}`;
}
