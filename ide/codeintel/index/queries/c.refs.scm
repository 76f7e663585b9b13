(call_expression function: (identifier) @reference)
(call_expression function: (field_expression field: (field_identifier) @reference))
(parameter_declaration type: (type_identifier) @reference)
