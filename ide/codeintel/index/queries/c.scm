; Definitions: @definition.<kind> on the whole node, @name on its name.
(function_definition declarator: (function_declarator declarator: (identifier) @name)) @definition.function
(function_definition
  declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name))) @definition.function
(function_definition
  declarator: (pointer_declarator
    declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name)))) @definition.function
(struct_specifier name: (type_identifier) @name body: (_)) @definition.struct
(union_specifier name: (type_identifier) @name body: (_)) @definition.union
(enum_specifier name: (type_identifier) @name body: (_)) @definition.enum
(type_definition declarator: (type_identifier) @name) @definition.type
(type_definition declarator: (pointer_declarator declarator: (type_identifier) @name)) @definition.type
(type_definition
  declarator: (function_declarator
    declarator: (parenthesized_declarator (pointer_declarator declarator: (type_identifier) @name)))) @definition.type

; Constants: object-like macros with a value (not include guards) and top-level const variables.
(preproc_def name: (identifier) @name value: (_)) @definition.constant
(preproc_function_def name: (identifier) @name) @definition.function
(translation_unit
  (declaration
    (type_qualifier)
    declarator: (init_declarator declarator: (identifier) @name)) @definition.constant)
(preproc_ifdef
  (declaration
    (type_qualifier)
    declarator: (init_declarator declarator: (identifier) @name)) @definition.constant)
(preproc_if
  (declaration
    (type_qualifier)
    declarator: (init_declarator declarator: (identifier) @name)) @definition.constant)
(preproc_else
  (declaration
    (type_qualifier)
    declarator: (init_declarator declarator: (identifier) @name)) @definition.constant)

(preproc_include path: (_) @import)
