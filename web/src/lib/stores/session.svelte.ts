/** Who is logged in. The session itself is an HttpOnly cookie; this only holds the user record. */
import { api, ApiError, setUnauthenticatedHandler } from "../api";
import { socket } from "../socket.svelte";
import type { User } from "../types";

type Phase = "checking" | "anonymous" | "ready";

class Session {
  phase = $state<Phase>("checking");
  user = $state<User | null>(null);
  /** Why the page went back to the login screen, when it was not the person's choice. */
  notice = $state<string | null>(null);
  private resetters: (() => void)[] = [];

  get isOwner(): boolean {
    return this.user?.role === "owner";
  }

  /** Stores register how to forget what they hold, so a logout leaves nothing behind. */
  onReset(reset: () => void): void {
    this.resetters.push(reset);
  }

  async check(): Promise<void> {
    try {
      this.user = await api.me();
      this.phase = "ready";
      socket.start();
    } catch (error) {
      if (!(error instanceof ApiError) || error.status !== 401) {
        this.notice = "The server could not be reached; log in when it is back.";
      }
      this.phase = "anonymous";
    }
  }

  async login(password: string): Promise<void> {
    await api.login(password);
    this.notice = null;
    await this.check();
  }

  async logout(): Promise<void> {
    try {
      await api.logout();
    } catch {
      // Already logged out on the server: forgetting here is all that is left to do.
    }
    this.forget(null);
  }

  /** The session ended under us (expired, revoked, a new OWNER_KEY). */
  expired(): void {
    if (this.phase !== "ready") return;
    this.forget("Your session has ended; log in again.");
  }

  private forget(notice: string | null): void {
    socket.stop();
    for (const reset of this.resetters) reset();
    this.user = null;
    this.notice = notice;
    this.phase = "anonymous";
  }
}

export const session = new Session();

setUnauthenticatedHandler(() => session.expired());
window.addEventListener("palaver:unauthenticated", () => session.expired());
