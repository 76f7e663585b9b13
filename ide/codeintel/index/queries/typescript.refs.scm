; References: calls, `new X`, heritage and type names in annotations and type arguments.
(call_expression function: (identifier) @reference)
(call_expression function: (member_expression property: (property_identifier) @reference))
(new_expression constructor: (identifier) @reference)
(type_annotation (type_identifier) @reference)
(type_arguments (type_identifier) @reference)
(extends_clause value: (identifier) @reference)
(implements_clause (type_identifier) @reference)
(extends_type_clause type: (type_identifier) @reference)
