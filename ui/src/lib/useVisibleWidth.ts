// A panel's lazy loading and its width, for the panels that query as many points as they have
// pixels (charts, histograms): `visible` turns true once the element comes within 300 px of the
// viewport (and stays true), `width` is its width in pixels, updated on a resize only when it
// changed enough to be worth a new query (widthAfterResize).
import type { RefObject } from 'preact';
import { useEffect, useState } from 'preact/hooks';

/** The width to keep after a resize to `measured` pixels: the new one when it differs from
 * `current` by more than 10%, else `current` (no re-query for a scrollbar or a pixel). */
export function widthAfterResize(current: number, measured: number): number {
  return Math.abs(measured - current) > current * 0.1 ? measured : current;
}

export function useVisibleWidth(ref: RefObject<HTMLElement>): { visible: boolean; width: number } {
  const [visible, setVisible] = useState(false);
  const [width, setWidth] = useState(0);
  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    setWidth(el.clientWidth);
    if (typeof IntersectionObserver === 'undefined') { setVisible(true); return; }
    const io = new IntersectionObserver((es) => {
      if (es.some((e) => e.isIntersecting)) { setVisible(true); io.disconnect(); }
    }, { rootMargin: '300px' });
    io.observe(el);
    const ro = new ResizeObserver(() => setWidth((w) => widthAfterResize(w, el.clientWidth)));
    ro.observe(el);
    return () => { io.disconnect(); ro.disconnect(); };
  }, []);
  return { visible, width };
}
