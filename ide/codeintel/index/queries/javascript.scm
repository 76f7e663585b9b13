; inherits: ecma
; JavaScript's own definitions (its class names are identifiers, its fields field_definitions).
(class_declaration name: (identifier) @name) @definition.class
(class_body
  (field_definition
    property: [(property_identifier) (private_property_identifier)] @name
    value: [(arrow_function) (function_expression)]) @definition.method)
