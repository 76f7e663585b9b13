; Definitions: @definition.<kind> on the whole node, @name on its name.
(class_definition name: (identifier) @name) @definition.class
(function_definition name: (identifier) @name) @definition.function

; Module-level constants: UPPER_CASE names assigned at the top of a module.
(module
  (assignment left: (identifier) @name) @definition.constant
  (#match? @name "^_*[A-Z][A-Z0-9_]*$"))

(import_statement name: (dotted_name) @import)
(import_statement name: (aliased_import name: (dotted_name) @import))
(import_from_statement module_name: (dotted_name) @import)
(import_from_statement module_name: (relative_import) @import)
