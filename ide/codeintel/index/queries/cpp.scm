; inherits: c
; C++'s own definitions. Out-of-line members (void Foo::bar() {}, Foo<T>::Foo()) capture the qualified
; name; extract.py splits it into Foo and bar.
(function_definition
  declarator: (function_declarator
    declarator: [(field_identifier) (operator_name) (destructor_name) (qualified_identifier)] @name)) @definition.function
(function_definition
  declarator: (pointer_declarator
    declarator: (function_declarator declarator: [(field_identifier) (qualified_identifier)] @name))) @definition.function
(function_definition
  declarator: (reference_declarator
    (function_declarator declarator: [(identifier) (field_identifier) (qualified_identifier)] @name))) @definition.function

; Declarations: member functions in a class body and prototypes.
(field_declaration
  declarator: (function_declarator declarator: [(field_identifier) (operator_name) (destructor_name)] @name)) @definition.function
(declaration
  declarator: (function_declarator declarator: [(identifier) (operator_name) (destructor_name)] @name)) @definition.function

(class_specifier name: [(type_identifier) (qualified_identifier)] @name body: (_)) @definition.class
(struct_specifier name: (qualified_identifier) @name body: (_)) @definition.struct
(union_specifier name: (qualified_identifier) @name body: (_)) @definition.union
(enum_specifier name: (qualified_identifier) @name body: (_)) @definition.enum
(namespace_definition name: [(namespace_identifier) (nested_namespace_specifier)] @name) @definition.namespace
(alias_declaration name: (type_identifier) @name) @definition.type
(concept_definition name: (identifier) @name) @definition.type

; Constants: const/constexpr variables at namespace level too.
(declaration_list
  (declaration
    (type_qualifier)
    declarator: (init_declarator declarator: (identifier) @name)) @definition.constant)
