; Definitions: @definition.<kind> on the whole node, @name on its name.
(function_declaration name: (identifier) @name) @definition.function
(generator_function_declaration name: (identifier) @name) @definition.function
(class_declaration name: (identifier) @name) @definition.class
(method_definition name: [(property_identifier) (private_property_identifier)] @name) @definition.method
(variable_declarator
  name: (identifier) @name
  value: [(arrow_function) (function_expression) (generator_function)]) @definition.function
(variable_declarator name: (identifier) @name value: (class)) @definition.class

; Module-level constants: top-level `const` (functions and classes above win for the same node).
(program (lexical_declaration kind: "const" (variable_declarator name: (identifier) @name) @definition.constant))
(program
  (export_statement
    (lexical_declaration kind: "const" (variable_declarator name: (identifier) @name) @definition.constant)))

(import_statement source: (string (string_fragment) @import))
(export_statement source: (string (string_fragment) @import))
(call_expression
  function: (identifier) @_require
  arguments: (arguments . (string (string_fragment) @import))
  (#eq? @_require "require"))
