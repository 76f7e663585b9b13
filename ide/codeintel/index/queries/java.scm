; Definitions: @definition.<kind> on the whole node, @name on its name.
(class_declaration name: (identifier) @name) @definition.class
(record_declaration name: (identifier) @name) @definition.class
(interface_declaration name: (identifier) @name) @definition.interface
(annotation_type_declaration name: (identifier) @name) @definition.interface
(enum_declaration name: (identifier) @name) @definition.enum
(method_declaration name: (identifier) @name) @definition.method
(constructor_declaration name: (identifier) @name) @definition.method

; Constants: static final fields (in either order) and interface fields (implicitly static final).
(field_declaration
  (modifiers "static" "final")
  declarator: (variable_declarator name: (identifier) @name)) @definition.constant
(field_declaration
  (modifiers "final" "static")
  declarator: (variable_declarator name: (identifier) @name)) @definition.constant
(constant_declaration declarator: (variable_declarator name: (identifier) @name)) @definition.constant

(import_declaration [(scoped_identifier) (identifier)] @import)
