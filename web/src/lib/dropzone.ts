/**
 * A drop zone for files, as a Svelte attachment: `{@attach dropZone({ onfiles, ondrag })}`.
 * Dragging other things (text, links) is left alone; `ondrag` tells whether files are over the
 * element (counted across its children, whose enter and leave events come in pairs).
 */
export interface DropZoneOptions {
  onfiles: (files: File[]) => void;
  ondrag?: (over: boolean) => void;
}

function hasFiles(event: DragEvent): boolean {
  return event.dataTransfer?.types.includes("Files") ?? false;
}

export function dropZone({ onfiles, ondrag }: DropZoneOptions): (node: HTMLElement) => () => void {
  return (node) => {
    let depth = 0;
    const enter = (event: DragEvent) => {
      if (!hasFiles(event)) return;
      event.preventDefault();
      depth += 1;
      if (depth === 1) ondrag?.(true);
    };
    const leave = (event: DragEvent) => {
      if (!hasFiles(event) || depth === 0) return;
      depth -= 1;
      if (depth === 0) ondrag?.(false);
    };
    const over = (event: DragEvent) => {
      if (hasFiles(event)) event.preventDefault();
    };
    const drop = (event: DragEvent) => {
      if (!hasFiles(event)) return;
      event.preventDefault();
      depth = 0;
      ondrag?.(false);
      const files = [...(event.dataTransfer?.files ?? [])];
      if (files.length) onfiles(files);
    };
    node.addEventListener("dragenter", enter);
    node.addEventListener("dragleave", leave);
    node.addEventListener("dragover", over);
    node.addEventListener("drop", drop);
    return () => {
      node.removeEventListener("dragenter", enter);
      node.removeEventListener("dragleave", leave);
      node.removeEventListener("dragover", over);
      node.removeEventListener("drop", drop);
    };
  };
}
