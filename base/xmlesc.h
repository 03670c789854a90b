/* xmlesc: text for XML and HTML (SimGrid platform files, the plots' index
 * page): &, <, > and " escaped. */
#ifndef CP_XMLESC_H
#define CP_XMLESC_H

#include <stdio.h>

void cp_xml_escape(FILE *out, const char *s);

#endif
