// The web UI's files from the executable (scripts/build.ts puts them in as
// the deflated asset "cairn-ui"). Nothing happens at start: the asset is
// mapped with the executable but never touched until the first request for
// the UI, which inflates it once (node:zlib loaded then, not before) and
// keeps the files. An agent nobody browses holds none of it.
import type { UiFile } from "./ui_pack.ts";
import { unpackUiFiles } from "./ui_pack.ts";

export const uiAssetName = "cairn-ui";

/** A memoised loader of the UI's files; it answers undefined outside a built executable (tsx, tests). */
export function seaUiFiles(): () => ReadonlyMap<string, UiFile> | undefined {
  let files: ReadonlyMap<string, UiFile> | undefined;
  let tried = false;
  return () => {
    if (!tried) {
      tried = true;
      const sea = process.getBuiltinModule("node:sea") as { isSea(): boolean; getRawAsset(key: string): ArrayBuffer } | undefined;
      if (sea?.isSea()) {
        let raw: ArrayBuffer | undefined;
        try {
          raw = sea.getRawAsset(uiAssetName);
        } catch {
          raw = undefined; // built without the UI
        }
        if (raw) files = unpackUiFiles(new Uint8Array(process.getBuiltinModule("node:zlib").inflateRawSync(new Uint8Array(raw))));
      }
    }
    return files;
  };
}
