// Pieces of the media views shared by the run page's Media tab and the workspace's image
// comparison: a step slider, a media blob (image, audio, video, HTML) fetched with the browser's
// key (api.blobAt) into an object URL once it nears the viewport, with its caption and, for an
// image, full size on click.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, type MediaRow } from '../lib/api';
import { fmtBytes } from '../lib/format';
import { ErrorBox, Loading } from './common';

/** Whether the element has come within `margin` of the viewport (stays true once it has). */
export function useNearViewport<T extends Element>(margin = '300px'): [{ current: T | null }, boolean] {
  const ref = useRef<T | null>(null);
  const [seen, setSeen] = useState(false);
  useEffect(() => {
    if (seen || !ref.current) return;
    if (typeof IntersectionObserver === 'undefined') { setSeen(true); return; }
    const io = new IntersectionObserver((es) => { if (es.some((e) => e.isIntersecting)) setSeen(true); }, { rootMargin: margin });
    io.observe(ref.current);
    return () => io.disconnect();
  }, [seen]);
  return [ref, seen];
}

/** An object URL of the row's bytes (fetched once `enabled`), revoked when the row changes. */
export function useObjectUrl(m: MediaRow, enabled = true): { url: string; error: unknown } {
  const [state, setState] = useState<{ url: string; error: unknown }>({ url: '', error: null });
  useEffect(() => {
    if (!m.uploaded || !enabled) { setState({ url: '', error: null }); return; }
    let url = '';
    let live = true;
    api.blobAt(m.url).then((b) => {
      url = URL.createObjectURL(new Blob([b], { type: m.mime }));
      if (live) setState({ url, error: null }); else URL.revokeObjectURL(url);
    }, (e) => { if (live) setState({ url: '', error: e }); });
    return () => { live = false; if (url) URL.revokeObjectURL(url); };
  }, [m.url, m.uploaded, enabled]);
  return state;
}

/** A slider over `steps` (ascending): the chosen index, the step, how many there are. */
export function StepSlider({ steps, idx, onIdx, testid }: { steps: number[]; idx: number; onIdx: (i: number) => void; testid: string }) {
  return (
    <label>step <strong data-testid={`${testid}-step`}>{steps[idx]}</strong>
      <input type="range" min={0} max={steps.length - 1} value={idx} data-testid={`${testid}-step-slider`}
        aria-label="step" onInput={(e) => onIdx(Number((e.target as HTMLInputElement).value))} />
      <span class="muted small">{steps.length} step{steps.length === 1 ? '' : 's'} ({steps[0]}–{steps[steps.length - 1]})</span>
    </label>
  );
}

/** One media blob: an image (full size on click), audio or video player, or HTML in a sandboxed
 * frame (no scripts, an opaque origin); its bytes are fetched when it nears the viewport.
 * `compact` (a table's media cell): without the MIME type and size line. */
export function BlobItem({ m, compact = false }: { m: MediaRow; compact?: boolean }) {
  const [ref, near] = useNearViewport<HTMLElement>();
  const { url, error } = useObjectUrl(m, near);
  const [big, setBig] = useState(false);
  const caption = m.caption ? <figcaption>{m.caption}</figcaption> : null;
  let body;
  if (error) body = <ErrorBox error={error} />;
  else if (!m.uploaded) body = <p class="muted small">uploading…</p>;
  else if (!url) body = <Loading what={m.type} />;
  else if (m.type === 'image') {
    body = (
      <button type="button" class="media-thumb" title="full size" onClick={() => setBig(true)}>
        <img src={url} alt={m.caption || `${m.key} step ${m.step} #${m.index}`} width={m.width || undefined} height={m.height || undefined}
          data-testid="media-image" data-sha256={m.sha256} />
      </button>
    );
  } else if (m.type === 'audio') body = <audio controls src={url} data-testid="media-audio" />;
  else if (m.type === 'video') body = m.mime.startsWith('image/') ? <img src={url} alt={m.caption || m.key} data-testid="media-video" /> : <video controls src={url} data-testid="media-video" />;
  else body = <iframe sandbox="" src={url} title={m.caption || m.key} class="media-html" data-testid="media-html" />;
  return (
    <figure class="media-item" data-index={m.index} ref={ref}>
      {body}
      {caption}
      {compact ? null : <div class="muted small">{m.mime} · {fmtBytes(m.size)}{m.width ? ` · ${m.width}×${m.height}` : ''}</div>}
      {big && url && (
        <div class="media-full" role="dialog" aria-label="full size" data-testid="media-full" onClick={() => setBig(false)}>
          <img src={url} alt={m.caption || m.key} />
        </div>
      )}
    </figure>
  );
}
