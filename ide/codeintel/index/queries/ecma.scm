; What JavaScript and TypeScript share (javascript.scm and typescript.scm inherit it; no language of its own).
; Definitions: @definition.<kind> on the whole node, @name on its name; @receiver names a method's type.
(function_declaration name: (identifier) @name) @definition.function
(generator_function_declaration name: (identifier) @name) @definition.function
(class_body
  (method_definition name: [(property_identifier) (private_property_identifier)] @name) @definition.method)
(variable_declarator
  name: (identifier) @name
  value: [(arrow_function) (function_expression) (generator_function)]) @definition.function
(variable_declarator name: (identifier) @name value: (class)) @definition.class

; Module-level assignments of functions: exports.f = …, module.exports.f = …, Foo.prototype.bar = ….
(program
  (expression_statement
    (assignment_expression
      left: (member_expression
        object: [(identifier) (member_expression)] @_object
        property: (property_identifier) @name)
      right: [(arrow_function) (function_expression) (generator_function)]) @definition.function)
  (#not-match? @_object "prototype$"))
(program
  (expression_statement
    (assignment_expression
      left: (member_expression
        object: (member_expression
          object: (identifier) @receiver
          property: (property_identifier) @_prototype)
        property: (property_identifier) @name)
      right: [(arrow_function) (function_expression) (generator_function)]) @definition.function)
  (#eq? @_prototype "prototype"))

; Module-level constants: top-level `const` (functions and classes above win for the same node).
(program (lexical_declaration kind: "const" (variable_declarator name: (identifier) @name) @definition.constant))
(program
  (export_statement
    (lexical_declaration kind: "const" (variable_declarator name: (identifier) @name) @definition.constant)))

(import_statement source: (string (string_fragment) @import))
(export_statement source: (string (string_fragment) @import))
(call_expression
  function: [(identifier) (import)] @_require
  arguments: (arguments . (string (string_fragment) @import))
  (#any-of? @_require "require" "import"))
