; inherits: typescript
; TSX: plus JSX components (the TypeScript grammar has no JSX nodes).
(jsx_opening_element name: (identifier) @reference)
(jsx_self_closing_element name: (identifier) @reference)
