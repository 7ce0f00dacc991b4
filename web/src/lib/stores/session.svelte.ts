/** Who is logged in. The session itself is an HttpOnly cookie; this only holds the user record. */
import { api, ApiError, beginSession, endSession, forgetEarly, SessionEnded, setUnauthenticatedHandler } from "../api";
import { socket } from "../socket.svelte";
import type { User } from "../types";

type Phase = "checking" | "anonymous" | "ready";
/** A logout forgets everything the person left on this browser; an ended session keeps what
 * they would lose by logging in again (drafts), since the same person is likely back. */
export type ResetReason = "logout" | "expired";

class Session {
  phase = $state<Phase>("checking");
  user = $state<User | null>(null);
  /** Why the page went back to the login screen, when it was not the person's choice. */
  notice = $state<string | null>(null);
  private resetters: ((why: ResetReason) => void)[] = [];
  private leaving = false;

  get isOwner(): boolean {
    return this.user?.role === "owner";
  }

  /** Stores register how to forget what they hold, so a logout leaves nothing behind. */
  onReset(reset: (why: ResetReason) => void): void {
    this.resetters.push(reset);
  }

  async check(): Promise<void> {
    try {
      this.user = await api.me();
      beginSession();
      this.phase = "ready";
      socket.start();
    } catch (error) {
      if (!(error instanceof ApiError) || error.status !== 401) {
        this.notice = "The server could not be reached; log in when it is back.";
      }
      // What the page asked for as it started was asked without a session: after a login it
      // must be asked again.
      forgetEarly();
      this.phase = "anonymous";
    }
  }

  async login(password: string): Promise<void> {
    await api.login(password);
    this.notice = null;
    await this.check();
  }

  async logout(): Promise<void> {
    // The server closes this session's sockets (4401) as it answers: that is the logout
    // itself, not a session ending under us, and must not forget the page first.
    this.leaving = true;
    try {
      await api.logout();
    } catch {
      // Already logged out on the server: forgetting here is all that is left to do.
    } finally {
      this.leaving = false;
    }
    this.forget(null, "logout");
  }

  /** The session ended under us (expired, revoked, a new OWNER_KEY). */
  expired(): void {
    if (this.phase !== "ready" || this.leaving) return;
    this.forget("Your session has ended; log in again.", "expired");
  }

  private forget(notice: string | null, why: ResetReason): void {
    socket.stop();
    endSession();
    for (const reset of this.resetters) reset(why);
    this.user = null;
    this.notice = notice;
    this.phase = "anonymous";
  }
}

export const session = new Session();

setUnauthenticatedHandler(() => session.expired());
window.addEventListener("palaver:unauthenticated", () => session.expired());
// A request of a session that ended has nobody left to tell (`SessionEnded`): not an error.
window.addEventListener("unhandledrejection", (event) => {
  if (event.reason instanceof SessionEnded) event.preventDefault();
});
