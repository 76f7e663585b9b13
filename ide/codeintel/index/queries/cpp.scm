; Definitions: @definition.<kind> on the whole node, @name on its name; @receiver names the class of an
; out-of-line member definition (void Foo::bar() {}).
(function_definition
  declarator: (function_declarator declarator: [(identifier) (field_identifier) (operator_name) (destructor_name)] @name)) @definition.function
(function_definition
  declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name))) @definition.function
(function_definition
  declarator: (reference_declarator (function_declarator declarator: (identifier) @name))) @definition.function
(function_definition
  declarator: (function_declarator
    declarator: (qualified_identifier
      scope: [(namespace_identifier) (template_type name: (type_identifier))] @receiver
      name: [(identifier) (destructor_name) (operator_name)] @name))) @definition.function
(field_declaration declarator: (function_declarator declarator: (field_identifier) @name)) @definition.function
(declaration declarator: (function_declarator declarator: (identifier) @name)) @definition.function
(class_specifier name: (type_identifier) @name body: (_)) @definition.class
(struct_specifier name: (type_identifier) @name body: (_)) @definition.struct
(union_specifier name: (type_identifier) @name body: (_)) @definition.union
(enum_specifier name: (type_identifier) @name body: (_)) @definition.enum
(namespace_definition name: [(namespace_identifier) (nested_namespace_specifier)] @name) @definition.namespace
(type_definition declarator: (type_identifier) @name) @definition.type
(alias_declaration name: (type_identifier) @name) @definition.type
(preproc_def name: (identifier) @name) @definition.constant
(preproc_function_def name: (identifier) @name) @definition.function

(preproc_include path: (_) @import)
