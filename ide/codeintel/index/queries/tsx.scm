; inherits: typescript
; TSX: the TypeScript definitions; its grammar extends TypeScript's with JSX only.
