import { describe, expect, it, vi } from "vitest";
import { dropZone } from "./dropzone";

function drag(type: string, kinds: string[], files: File[] = []): DragEvent {
  const event = new Event(type, { bubbles: true, cancelable: true }) as DragEvent;
  Object.defineProperty(event, "dataTransfer", { value: { types: kinds, files } });
  return event;
}

describe("dropZone", () => {
  it("reports files over it across its children and hands the dropped files on", () => {
    const zone = document.createElement("div");
    const child = document.createElement("p");
    zone.append(child);
    const onfiles = vi.fn();
    const ondrag = vi.fn();
    const detach = dropZone({ onfiles, ondrag })(zone);
    zone.dispatchEvent(drag("dragenter", ["Files"]));
    child.dispatchEvent(drag("dragenter", ["Files"]));
    zone.dispatchEvent(drag("dragleave", ["Files"]));
    expect(ondrag.mock.calls).toEqual([[true]]);
    const over = drag("dragover", ["Files"]);
    zone.dispatchEvent(over);
    expect(over.defaultPrevented).toBe(true);
    const file = new File(["x"], "a.txt");
    const dropped = drag("drop", ["Files"], [file]);
    child.dispatchEvent(dropped);
    expect(dropped.defaultPrevented).toBe(true);
    expect(onfiles).toHaveBeenCalledWith([file]);
    expect(ondrag.mock.calls).toEqual([[true], [false]]);
    detach();
    zone.dispatchEvent(drag("drop", ["Files"], [file]));
    expect(onfiles).toHaveBeenCalledTimes(1);
  });

  it("leaves dragged text alone", () => {
    const zone = document.createElement("div");
    const onfiles = vi.fn();
    dropZone({ onfiles })(zone);
    const event = drag("drop", ["text/plain"]);
    zone.dispatchEvent(event);
    expect(event.defaultPrevented).toBe(false);
    expect(onfiles).not.toHaveBeenCalled();
  });
});
