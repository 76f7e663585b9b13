; inherits: ecma
; TypeScript's own definitions: signatures, abstract classes, interfaces, type aliases, enums, namespaces.
(function_signature name: (identifier) @name) @definition.function
(class_declaration name: (type_identifier) @name) @definition.class
(abstract_class_declaration name: (type_identifier) @name) @definition.class
(class_body
  (public_field_definition
    name: [(property_identifier) (private_property_identifier)] @name
    value: [(arrow_function) (function_expression)]) @definition.method)
(abstract_method_signature name: (property_identifier) @name) @definition.method
(interface_declaration name: (type_identifier) @name) @definition.interface
(method_signature name: (property_identifier) @name) @definition.method
(type_alias_declaration name: (type_identifier) @name) @definition.type
(enum_declaration name: (identifier) @name) @definition.enum
(internal_module name: [(identifier) (nested_identifier)] @name) @definition.namespace

(import_require_clause source: (string (string_fragment) @import))
