import { defineConfig } from 'vite';

// Preact through esbuild's automatic JSX runtime: no framework plugin needed.
export default defineConfig({
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  base: '/',
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
    chunkSizeWarningLimit: 320,
  },
  test: {
    include: ['src/**/*.test.ts'],
    environment: 'node',
  },
} as any);
